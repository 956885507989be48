//! What the seam plugs share. A plug is a small component that exports
//! `dsh:ask-user/user-questions@0.1.0` (and the `types` it uses) and
//! imports nothing but WASI 0.2: composed with the tool, it makes one
//! component that any WebAssembly runtime loads (`ask-user component
//! --plug KIND`, docs/src/embedding/runtimes.md).
//!
//! Each plug crate implements [`Guest`] and says `ask_user_plug::export_plug!(Plug
//! with_types_in ask_user_plug);`. Here: the bindings, the answers read from
//! their JSON (an answers file's, an inbox's outcome), the questions written
//! as JSON, and errors coded for the seam.

pub use ask_user_codes::ErrorCode;
use serde::Deserialize;

wit_bindgen::generate!({
    inline: "
        package ask-user:plug;

        /// A seam plug: the questions' types and the seam, exported, so that
        /// nothing of `dsh:ask-user` is left for a runtime to supply.
        world plug {
            export dsh:ask-user/types@0.1.0;
            export dsh:ask-user/user-questions@0.1.0;
        }
    ",
    path: "../../wit/v0.1.0",
    world: "ask-user:plug/plug",
    pub_export_macro: true,
    export_macro_name: "export_plug",
});

use exports::dsh::ask_user::types::ErrorCode as WitCode;
pub use exports::dsh::ask_user::types::{Answer, AskError, Question, Request};
pub use exports::dsh::ask_user::user_questions::Guest;

/// The name a coded seam error goes by (SPEC §2.6).
const USER_QUESTION_ERROR: &str = "UserQuestionError";

/// A coded seam error: `code` with `message`, saying what happened and what
/// to do next.
pub fn error(code: ErrorCode, message: impl Into<String>) -> AskError {
    AskError {
        name: code.name().unwrap_or(USER_QUESTION_ERROR).to_owned(),
        code: Some(to_wit(code)),
        message: message.into(),
    }
}

/// The one table from [`ErrorCode`] to this WIT version's codes.
fn to_wit(code: ErrorCode) -> WitCode {
    match code {
        ErrorCode::AskAborted => WitCode::AskAborted,
        ErrorCode::AskCancelled => WitCode::AskCancelled,
        ErrorCode::AskTimedOut => WitCode::AskTimedOut,
        ErrorCode::EmptyQuestions => WitCode::EmptyQuestions,
        ErrorCode::CallerNotLive => WitCode::CallerNotLive,
        ErrorCode::DelegatedCaller => WitCode::DelegatedCaller,
        ErrorCode::BadIntent => WitCode::BadIntent,
        ErrorCode::NoProvider => WitCode::NoProvider,
        ErrorCode::InvalidAnswer => WitCode::InvalidAnswer,
        other => WitCode::Other(other.as_str().to_owned()),
    }
}

/// An answer as JSON carries it (`{"id", "selected", "custom"}`), the
/// shape of an answers file and of an inbox's outcome.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireAnswer {
    id: String,
    #[serde(default)]
    selected: Vec<String>,
    #[serde(default)]
    custom: Option<String>,
}

/// `{"answers": [...]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireAnswers {
    answers: Vec<WireAnswer>,
}

/// A failure an answerer reported (`{"name", "code", "message"}`).
#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Reads `{"answers": [...]}` (an answers file's shape).
pub fn answers_from_json(text: &str) -> Result<Vec<Answer>, serde_json::Error> {
    serde_json::from_str::<WireAnswers>(text).map(|wire| answers(wire.answers))
}

/// Reads `value` as `{"answers": [...]}`.
pub fn answers_from_value(value: serde_json::Value) -> Result<Vec<Answer>, serde_json::Error> {
    serde_json::from_value::<WireAnswers>(value).map(|wire| answers(wire.answers))
}

fn answers(wire: Vec<WireAnswer>) -> Vec<Answer> {
    wire.into_iter()
        .map(|a| Answer {
            id: a.id,
            selected: a.selected,
            custom: a.custom,
        })
        .collect()
}

/// Reads an error an answerer reported as JSON, keeping its name, code and
/// message; one without a code stays uncoded, as it was raised.
pub fn error_from_value(value: serde_json::Value) -> AskError {
    let wire = serde_json::from_value::<WireError>(value).unwrap_or(WireError {
        name: None,
        code: None,
        message: None,
    });
    let code = wire.code.as_deref().map(ErrorCode::parse);
    AskError {
        name: wire
            .name
            .or_else(|| code.as_ref().and_then(ErrorCode::name).map(str::to_owned))
            .unwrap_or_else(|| USER_QUESTION_ERROR.to_owned()),
        code: code.map(to_wit),
        message: wire
            .message
            .unwrap_or_else(|| "the answerer gave no reason".to_owned()),
    }
}

/// The questions as JSON, in the seam's wire shape (SPEC §5: camelCase,
/// an option's extra keys beside its label).
pub fn request_to_value(request: &Request) -> serde_json::Value {
    use serde_json::{Map, Value};
    let questions = request.questions.iter().map(|q| {
        let mut question = Map::new();
        question.insert("id".into(), q.id.clone().into());
        question.insert("question".into(), q.question.clone().into());
        let optional = [("detail", &q.detail), ("header", &q.header)];
        for (key, value) in optional {
            if let Some(value) = value {
                question.insert(key.into(), value.clone().into());
            }
        }
        if let Some(options) = &q.options {
            let options = options.iter().map(|o| {
                let mut option = match o.extra_json.as_deref().map(serde_json::from_str) {
                    Some(Ok(Value::Object(extra))) => extra,
                    _ => Map::new(),
                };
                option.insert("label".into(), o.label.clone().into());
                if let Some(description) = &o.description {
                    option.insert("description".into(), description.clone().into());
                }
                Value::Object(option)
            });
            question.insert("options".into(), Value::Array(options.collect()));
        }
        if let Some(multi) = q.multi_select {
            question.insert("multiSelect".into(), multi.into());
        }
        Value::Object(question)
    });
    serde_json::json!({ "questions": questions.collect::<Vec<_>>() })
}

/// Whether every question of `request` has an answer in `answers`; the id
/// of the first that has none.
pub fn unanswered<'a>(request: &'a Request, answers: &[Answer]) -> Option<&'a str> {
    request
        .questions
        .iter()
        .map(|q| q.id.as_str())
        .find(|id| !answers.iter().any(|a| a.id == *id))
}
