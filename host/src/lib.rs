//! The host of the `ask_user_question` tool component: the `ask-user`
//! command, and [`HostBuilder`], which assembles a host from a
//! configuration. Each layer is a crate of its own, re-exported here:
//!
//! - the seam ([`ask_user_seam`]): questions, error codes, agents and
//!   scopes, the answerer [`Waterfall`], the [`UserQuestions`] pipeline every
//!   ask goes through, the audit trail, this user's [`files`]. No
//!   WebAssembly in it.
//! - the contract ([`contract`], crate `ask-user-contract`): the WIT package
//!   and its bindings, one module per frozen version.
//! - the runtime ([`ask_user_runtime`]): [`engine`], [`runtime`]
//!   ([`ToolRuntime`] loads the component in the sandbox: no WASI
//!   capabilities, a CPU deadline, a memory cap, and runs tool calls), the
//!   code [`cache`], and the shipped [`COMPONENT`]. No HTTP, database,
//!   terminal or MCP crate in it: what an embedder adds.
//! - [`answerers`] (crate `ask-user-answerers`): terminal, script, bridge
//!   and web, and the registry of kinds a [`Config`] file names.
//! - [`answer_page`] and [`serve`] (crate `ask-user-web`): the page where a
//!   human answers and how pages and services are served, which the web
//!   answerer, the inbox and MCP share.
//! - [`inbox`] (crate `ask-user-inbox`): the service that keeps every
//!   agent's questions on disk and answers them from one page, and its
//!   client and answerer kind.
//! - [`mcp`] (crate `ask-user-mcp`): the tool as an MCP server.
//! - [`hook`], here: `ask-user hook`, which answers an agent's own question
//!   tool (Claude Code's) through the same answerers, from its hooks.
//! - [`plugs`], here: the seam plugs, and the tool composed with one for a
//!   runtime that brings no seam of its own (the wasmtime CLI, wassette).
//! - [`config`] and [`host`], here: the configuration file (the answerer
//!   kinds above, the inbox's table) and [`HostBuilder`]; the `ask-user`
//!   command is a thin shell over them.
//!
//! Each call asks through the seam: the caller's identity is checked against
//! the [`AgentRegistry`] (only a live root agent may ask the human), then the
//! request is offered to the answerers, raced against the turn's
//! cancellation and any time limit, and the answers are checked.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use ask_user::answerers::{ready, script::ScriptAnswerer};
//! use ask_user::{AnswererEntry, HostBuilder};
//!
//! let script = ScriptAnswerer::from_json(r#"{"answers":[{"id":"pkg","selected":["pnpm"]}]}"#)?;
//! let host = HostBuilder::new()
//!     .answerer(AnswererEntry::new("script", ready(script)))
//!     .build()
//!     .await?;
//! let root = host.agents().register_root("session-1", None);
//! let signal = tokio_util::sync::CancellationToken::new();
//! let result = host
//!     .runtime()
//!     .call(&root, &signal, r#"{"questions":[{"id":"pkg","question":"Which package manager?"}]}"#)
//!     .await;
//! println!("{}", serde_json::to_string(&result)?);
//! # Ok(()) }
//! ```

mod cli_error;
pub mod config;
pub mod front_end;
pub mod hook;
pub mod host;
pub mod plugs;

pub use ask_user_answerers as answerers;
pub use ask_user_inbox as inbox;
pub use ask_user_mcp as mcp;
pub use ask_user_runtime::{
    COMPONENT, cache, contract, engine, runtime, sandbox, tool_result, wasmtime,
};
pub use ask_user_web::{answer_page, serve};

pub use ask_user_seam::{
    self as seam, AgentHandle, AgentRegistry, Answer, AnswerError, AnswerFuture, Answerer,
    AnswererHandle, Ask, AskError, AskRequest, Delegated, ErrorCode, Intent, Next, Placement,
    Question, QuestionOption, Race, Scope, TransportedError, UserQuestions, Waterfall, agents,
    audit, error, files, question, remote, scope, secret::id as new_id, text, waterfall,
};
pub use cache::CodeCache;
pub use cli_error::{CliError, Context};
pub use config::{AnswererEntry, Config};
pub use engine::{Engine, EngineConfig};
pub use host::{Host, HostBuilder, HostError};
pub use runtime::{RuntimeConfig, ToolDefinition, ToolRuntime};
pub use tool_result::ToolResult;
