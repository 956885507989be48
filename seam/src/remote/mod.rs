//! Answerers on the far side of a stream (a bridge process, a web page, an
//! inbox): the remote-event frames of SPEC §5 they exchange, and
//! [`PendingQuestions`], the questions waiting for their outcome.
//!
//! Down: `{"type":"ready","clientId":…}`,
//! `{"type":"waterfall","eventId":…,"agentId":…,"request":{"questions":[…]}}`
//! (with `"askedBy":["session-1","reviewer"]` when the host relays a
//! sub-agent's ask), `{"type":"cancel","eventId":…}`.
//! Up: `{"eventId":…,"outcome":{"kind":"next"}}`,
//! `{"eventId":…,"outcome":{"kind":"result","value":{"answers":[…]}}}` or
//! `{"eventId":…,"outcome":{"kind":"rejected","error":{"name":…,"message":…,"code":…}}}`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{AnswerError, TransportedError};
use crate::question::{Answer, AskRequest};

mod pending;

pub use pending::{Gone, NotPending, Pending, PendingQuestions, Unsettled};

/// What the far side did with an event.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Outcome {
    Next,
    Result { value: ResultValue },
    Rejected { error: TransportedError },
}

/// The answers of a `result` outcome.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultValue {
    pub answers: Vec<Answer>,
}

/// An outcome from the far side. Other keys (SPEC §5's `clientId`) are
/// ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpFrame {
    pub event_id: String,
    pub outcome: Outcome,
}

impl Outcome {
    /// The outcome as the waterfall takes it: answers, an error, or `None`
    /// to pass the request on.
    pub fn into_answers(self) -> Option<Result<Vec<Answer>, AnswerError>> {
        match self {
            Outcome::Next => None,
            Outcome::Result { value } => Some(Ok(value.answers)),
            Outcome::Rejected { error } => Some(Err(AnswerError::Transported(error))),
        }
    }
}

pub fn ready(client_id: &str) -> Value {
    json!({"type": "ready", "clientId": client_id})
}

pub fn waterfall(event_id: &str, agent_id: Option<&str>, request: &AskRequest) -> Value {
    json!({"type": "waterfall", "eventId": event_id, "agentId": agent_id, "request": request})
}

pub fn cancel(event_id: &str) -> Value {
    json!({"type": "cancel", "eventId": event_id})
}
