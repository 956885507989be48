//! Component-level tests: the real `ask_user_question` component in the real
//! host. One test binary (each binary links wasmtime, so one keeps the build
//! small and fast); one module per concern.

mod bridge;
mod cancellation;
mod cases;
mod definition;
mod errors;
mod mcp;
mod policy;
mod sandbox;
mod shipped;
mod tool_calls;
mod waterfall;
mod web;
