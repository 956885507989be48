//! The host of the `ask_user_question` tool component.
//!
//! [`ToolRuntime`] loads the component (the sandbox: no WASI capabilities, a
//! CPU deadline, a memory cap) and runs tool calls. Each call asks through
//! [`UserQuestions`], the seam: the caller's identity is checked against the
//! [`AgentRegistry`] (only a live root agent may ask the human), then the
//! request is offered to the [`Waterfall`] of answerers, raced against the
//! turn's cancellation and any time limit, and the answers are checked.
//!
//! An embedding host may also ask through [`UserQuestions::ask`] directly,
//! for example for its own plan-review question with an [`Intent`].
//!
//! ```no_run
//! # async fn run() -> wasmtime::Result<()> {
//! use std::sync::Arc;
//! use ask_user::{AgentRegistry, Placement, RuntimeConfig, ToolRuntime, UserQuestions};
//! use ask_user::answerers::script::ScriptAnswerer;
//!
//! let agents = Arc::new(AgentRegistry::new());
//! let seam = Arc::new(UserQuestions::new(agents.clone()));
//! let script = ScriptAnswerer::from_json(r#"{"answers":[{"id":"pkg","selected":["pnpm"]}]}"#)?;
//! seam.waterfall().register(script, Placement::default());
//!
//! let runtime = ToolRuntime::new(ask_user::COMPONENT, seam, RuntimeConfig::default()).await?;
//! let root = agents.register_root("session-1", None);
//! let signal = tokio_util::sync::CancellationToken::new();
//! let result = runtime
//!     .call(&root, &signal, r#"{"questions":[{"id":"pkg","question":"Which package manager?"}]}"#)
//!     .await;
//! println!("{}", serde_json::to_string(&result)?);
//! # Ok(()) }
//! ```

pub mod agents;
pub mod answerers;
pub mod audit;
mod bindings;
pub mod config;
pub mod error;
pub mod question;
pub mod runtime;
mod sandbox;
pub mod scope;
pub mod seam;
mod sync;
pub mod tool_result;
mod validate;
pub mod waterfall;

pub use agents::{AgentHandle, AgentRegistry};
pub use error::{AnswerError, AskError, ErrorCode, TransportedError};
pub use question::{Answer, AskRequest, Intent, Question, QuestionOption};
pub use runtime::{RuntimeConfig, ToolDefinition, ToolRuntime};
pub use scope::Scope;
pub use seam::UserQuestions;
pub use tool_result::ToolResult;
/// The wasmtime this host is built on (its `Error` is the load error type).
pub use wasmtime;
pub use waterfall::{AnswerFuture, Answerer, AnswererHandle, Ask, Next, Placement, Waterfall};

/// The `ask_user_question` component built from this repository's `guest/`
/// (release profile, `wasm32-wasip2`).
pub const COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ask_user_tool.wasm"));
