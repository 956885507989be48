//! The WIT bindings of `dsh:ask-user@0.1.0` and the conversions between
//! them and the host's own types. Nothing here decides anything.

use serde_json::{Map, Value};

use crate::error::{AskError, ErrorCode};
use crate::question::{Answer, AskRequest, Intent, Question, QuestionOption};

wasmtime::component::bindgen!({
    world: "ask-user-tool",
    path: "../wit",
    imports: { default: async | trappable },
    exports: { default: async },
});

pub use dsh::ask_user::types as wit;
pub use exports::dsh::ask_user::tool;

/// The component sent something the contract does not allow. The call is
/// ended with a trap: a guest that breaks the contract gets no answer.
#[derive(Debug)]
pub struct ContractViolation(pub String);

impl std::fmt::Display for ContractViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the component broke the contract: {}", self.0)
    }
}

impl std::error::Error for ContractViolation {}

pub fn request_from_wit(request: wit::Request) -> Result<AskRequest, ContractViolation> {
    let questions = request
        .questions
        .into_iter()
        .map(|q| {
            let options = q
                .options
                .map(|options| {
                    options
                        .into_iter()
                        .map(option_from_wit)
                        .collect::<Result<_, _>>()
                })
                .transpose()?;
            Ok(Question {
                id: q.id,
                question: q.question,
                detail: q.detail,
                header: q.header,
                options,
                multi_select: q.multi_select,
                intent: q
                    .intent
                    .map(|wit::Intent::PlanReview(p)| Intent::PlanReview { approve: p.approve }),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(AskRequest { questions })
}

fn option_from_wit(option: wit::QuestionOption) -> Result<QuestionOption, ContractViolation> {
    let extra = match option.extra_json {
        None => Map::new(),
        Some(json) => match serde_json::from_str::<Value>(&json) {
            Ok(Value::Object(extra)) => extra,
            _ => {
                return Err(ContractViolation(format!(
                    "the extra-json of option {:?} is not the text of a JSON object",
                    option.label
                )));
            }
        },
    };
    Ok(QuestionOption {
        label: option.label,
        description: option.description,
        extra,
    })
}

pub fn answer_to_wit(answer: Answer) -> wit::Answer {
    wit::Answer {
        id: answer.id,
        selected: answer.selected,
        custom: answer.custom,
    }
}

pub fn answer_from_wit(answer: wit::Answer) -> Answer {
    Answer {
        id: answer.id,
        selected: answer.selected,
        custom: answer.custom,
    }
}

pub fn error_to_wit(error: &AskError) -> wit::AskError {
    let code = error.code().map(|code| match code {
        ErrorCode::AskAborted => wit::ErrorCode::AskAborted,
        ErrorCode::AskCancelled => wit::ErrorCode::AskCancelled,
        ErrorCode::AskTimedOut => wit::ErrorCode::AskTimedOut,
        ErrorCode::EmptyQuestions => wit::ErrorCode::EmptyQuestions,
        ErrorCode::CallerNotLive => wit::ErrorCode::CallerNotLive,
        ErrorCode::DelegatedCaller => wit::ErrorCode::DelegatedCaller,
        ErrorCode::BadIntent => wit::ErrorCode::BadIntent,
        ErrorCode::NoProvider => wit::ErrorCode::NoProvider,
        ErrorCode::InvalidAnswer => wit::ErrorCode::InvalidAnswer,
        ErrorCode::Other(code) => wit::ErrorCode::Other(code.clone()),
    });
    wit::AskError {
        name: error.name().to_owned(),
        code,
        message: error.message().to_owned(),
    }
}
