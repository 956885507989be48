//! The user-questions seam of `ask_user_question` (SPEC §2–§5), with no
//! WebAssembly runtime in it.
//!
//! [`UserQuestions`] is the pipeline every ask goes through, whether it comes
//! from the sandboxed tool component or straight from the embedding host: the
//! caller's identity is checked against the [`AgentRegistry`] (only a live
//! root agent may ask the human, unless the host relays its sub-agents'
//! asks: [`Delegated`]), then the request is offered to the
//! [`Waterfall`] of answerers, raced against the turn's cancellation and any
//! time limit, and the answers are checked before anyone sees them.
//!
//! Answerers on the far side of a stream (a bridge process, a web page, an
//! inbox) share [`remote`]: the frames they exchange and the
//! [`PendingQuestions`](remote::PendingQuestions) that hold what is waiting
//! for them. [`files`] keeps what this user's programs write (the audit
//! trail, the code cache, an inbox's state) to this user.

pub mod agents;
pub mod audit;
pub mod call;
pub mod config;
pub mod error;
pub mod files;
mod floor;
pub mod question;
pub mod remote;
pub mod scope;
pub mod secret;
mod sync;
pub mod text;
mod user_questions;
pub mod validate;
pub mod waterfall;

pub use agents::{AgentHandle, AgentRegistry, Delegated};
pub use ask_user_codes::{ErrorCode, limits};
pub use call::ScopedCall;
pub use error::{AnswerError, AskError, TransportedError};
pub use question::{Accepts, Answer, AskRequest, Intent, OwnWords, Question, QuestionOption};
pub use scope::Scope;
pub use user_questions::UserQuestions;
pub use waterfall::{
    AnswerFuture, Answerer, AnswererHandle, Ask, Elsewhere, Next, Placement, Race, Waterfall,
};
