//! The `ask-user` command and its servers, run as users run them: one test
//! binary (one link of wasmtime), a module per area, over
//! `ask-user-test-support`.

mod acp;
mod apps;
mod book;
mod cli;
mod clients;
mod conformance;
mod inbox;
mod mcp_http;
mod mcp_python;
mod mcp_stdio;
mod mcp_tasks;
mod opencode;
mod release;
mod runtimes;
mod team_inbox;
mod terminal;
