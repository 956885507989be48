//! Answerers of `ask_user_question`: the parts of a host that put a question
//! in front of the human and bring the answer back through the seam
//! ([`ask_user_seam`]), and the registry of answerer kinds a configuration
//! file can name.
//!
//! - `acp` (feature `acp`): the form of an editor that speaks ACP (the
//!   Agent Client Protocol), for an agent host that does;
//! - [`form`]: a batch as one elicitation form (MCP's and ACP's), and a
//!   form's content back as answers;
//! - [`script`]: answers from a file, matched by question id or text
//!   (tests, CI, replays);
//! - [`bridge`]: a child process spoken to in JSON lines (any language);
//! - [`terminal`] (feature `terminal`): an interactive prompt on the
//!   controlling terminal;
//! - [`web`] (feature `web`): a page on 127.0.0.1, served with the parts
//!   the inbox serves too ([`ask_user_web`]).
//!
//! A kind is one file: its answerer, its own config table and its start-up
//! (an [`AnswererKind`]), and one line in [`Kinds::builtin`]; a kind of
//! another crate is [`Kinds::register`]ed by whoever reads the configuration.
//! Untrusted text shown to a human goes through [`ask_user_seam::text`];
//! identities and page tokens come from [`ask_user_seam::secret`].

#[cfg(feature = "acp")]
pub mod acp;
pub mod bridge;
pub mod form;
mod kind;
pub mod script;
#[cfg(feature = "terminal")]
pub mod terminal;
#[cfg(feature = "web")]
pub mod web;

pub use kind::{AnswererKind, ConfigProblem, KindTable, Kinds, Page, Setup, Started, race, ready};
