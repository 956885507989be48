//! Runs the `ask_user_question` tool component on wasmtime, and nothing
//! more: what an embedder adds to give its agents the tool, with answerers
//! of its own behind the seam ([`ask_user_seam`]).
//!
//! - [`contract`] (crate `ask-user-contract`): the WIT package, one module
//!   per frozen version, and [`contract::add_to_linker`] for an embedder
//!   with a linker of its own;
//! - [`engine`]: one wasmtime engine per process, pooling, the CPU ticker;
//! - [`runtime`]: [`ToolRuntime`] loads the component (the sandbox
//!   ([`sandbox`]): no WASI capabilities, a CPU deadline, a memory cap) and
//!   runs tool calls; [`cache`] keeps compiled code between runs;
//! - [`COMPONENT`]: the tool component itself, built from the repository's
//!   `guest/` and checked in, so this crate builds with a plain stable
//!   toolchain and no `wasm32` target.
//!
//! It depends on no HTTP, database, terminal or MCP crate; answerers come
//! from `ask-user-answerers` or the embedder.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use ask_user_runtime::{COMPONENT, Engine, RuntimeConfig, ToolRuntime};
//! use ask_user_seam::{AgentRegistry, UserQuestions};
//!
//! let agents = Arc::new(AgentRegistry::default());
//! let seam = Arc::new(UserQuestions::new(agents.clone()));
//! // Register answerers on `seam.waterfall()` here.
//! let runtime =
//!     ToolRuntime::with_engine(Engine::shared()?, COMPONENT, seam, RuntimeConfig::default())
//!         .await?;
//! let root = agents.register_root("session-1", None);
//! let signal = tokio_util::sync::CancellationToken::new();
//! let result = runtime
//!     .call(&root, &signal, r#"{"questions":[{"id":"pkg","question":"Which one?"}]}"#)
//!     .await;
//! println!("{}", serde_json::to_string(&result)?);
//! # Ok(()) }
//! ```

pub mod cache;
mod cpu;
pub mod engine;
pub mod runtime;
pub mod sandbox;
pub mod tool_result;

/// The WIT contract (crate `ask-user-contract`).
pub use ask_user_contract as contract;
pub use cache::CodeCache;
pub use engine::{Engine, EngineConfig};
pub use runtime::{RuntimeConfig, SandboxSettings, ToolDefinition, ToolRuntime};
pub use tool_result::ToolResult;
/// The wasmtime this runtime is built on (its `Error` is the load error type).
pub use wasmtime;

/// The `ask_user_question` component, built from the repository's `guest/`
/// (`guest` profile, `wasm32-wasip2`, with the rustc named in
/// `component/ask_user_tool.rustc`) and checked in; the repository's CI
/// rebuilds it and fails when the bytes differ.
pub const COMPONENT: &[u8] = include_bytes!("../component/ask_user_tool.wasm");
