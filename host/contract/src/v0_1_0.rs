//! `dsh:ask-user@0.1.0` (`wit/v0.1.0/`, frozen): its bindings and the one
//! table between its types and the host's. Nothing here decides anything.
//!
//! In this version the import's question record has `detail` and `intent`,
//! which only host-side askers may set: a component that sets either breaks
//! the contract (it could stage a fake plan review).

use ask_user_seam::{Answer, AskError, AskRequest, ErrorCode, Intent, Question, QuestionOption};
use serde_json::{Map, Value};
use wasmtime::Store;
use wasmtime::component::{HasData, Linker};

use super::{AskContext, RawDefinition, Refusal, ToolFailure, ToolOutput, UserQuestionsView};

wasmtime::component::bindgen!({
    world: "ask-user-tool",
    path: "wit/v0.1.0",
    imports: { default: async | trappable },
    exports: { default: async },
});

use dsh::ask_user::types as wit;
use dsh::ask_user::user_questions;

/// Provides this version's `user-questions` (and `types`) to `linker`.
pub fn add_to_linker<T: UserQuestionsView + 'static>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    AskUserTool::add_to_linker::<T, Seam>(linker, |state| state.user_questions())
}

/// The import's view of a store's data: its [`AskContext`].
struct Seam;

impl HasData for Seam {
    type Data<'a> = &'a mut AskContext;
}

impl wit::Host for AskContext {}

impl user_questions::Host for AskContext {
    async fn ask(
        &mut self,
        request: wit::Request,
    ) -> wasmtime::Result<Result<Vec<wit::Answer>, wit::AskError>> {
        self.count_ask()?;
        let request = request_from_wit(request).map_err(wasmtime::Error::new)?;
        Ok(AskContext::ask(self, request)
            .await?
            .map(|answers| answers.into_iter().map(answer_to_wit).collect())
            .map_err(|error| error_to_wit(&error)))
    }
}

pub(super) async fn definition<T: Send>(
    tool: &AskUserTool,
    store: &mut Store<T>,
) -> wasmtime::Result<RawDefinition> {
    let d = tool.dsh_ask_user_tool().call_definition(store).await?;
    Ok(RawDefinition {
        name: d.name,
        description: d.description,
        input_schema: d.input_schema,
        output_schema: d.output_schema,
    })
}

pub(super) async fn execute<T: Send>(
    tool: &AskUserTool,
    store: &mut Store<T>,
    arguments: &str,
) -> wasmtime::Result<Result<ToolOutput, ToolFailure>> {
    let outcome = tool
        .dsh_ask_user_tool()
        .call_execute(store, arguments)
        .await?;
    Ok(match outcome {
        Ok(output) => Ok(ToolOutput {
            answers: output.answers.into_iter().map(answer_from_wit).collect(),
            text: output.text,
        }),
        Err(failure) => Err(ToolFailure {
            name: failure.name,
            code: failure.code.as_deref().map(ErrorCode::parse),
            message: failure.message,
        }),
    })
}

fn request_from_wit(request: wit::Request) -> Result<AskRequest, Refusal> {
    let questions = request
        .questions
        .into_iter()
        .map(|q| {
            let host_only = match (&q.detail, &q.intent) {
                (Some(_), _) => Some("detail"),
                (_, Some(_)) => Some("intent"),
                (None, None) => None,
            };
            if let Some(field) = host_only {
                return Err(Refusal::Violation(format!(
                    "question {:?} sets `{field}`, which only the host's own askers may set",
                    q.id
                )));
            }
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
                detail: None,
                header: q.header,
                options,
                multi_select: q.multi_select,
                intent: None::<Intent>,
                accepts: None,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(AskRequest { questions })
}

fn option_from_wit(option: wit::QuestionOption) -> Result<QuestionOption, Refusal> {
    let extra = match option.extra_json {
        None => Map::new(),
        Some(json) => match serde_json::from_str::<Value>(&json) {
            Ok(Value::Object(extra)) => extra,
            _ => {
                return Err(Refusal::Violation(format!(
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

fn answer_to_wit(answer: Answer) -> wit::Answer {
    wit::Answer {
        id: answer.id,
        selected: answer.selected,
        custom: answer.custom,
    }
}

fn answer_from_wit(answer: wit::Answer) -> Answer {
    Answer {
        id: answer.id,
        selected: answer.selected,
        custom: answer.custom,
    }
}

/// The one table from [`ErrorCode`] to this version's `error-code`. Codes
/// this version has no case for travel as `other`, spelled as on the wire.
fn error_to_wit(error: &AskError) -> wit::AskError {
    use wit::ErrorCode as W;
    let code = error.code().map(|code| match code {
        ErrorCode::AskAborted => W::AskAborted,
        ErrorCode::AskCancelled => W::AskCancelled,
        ErrorCode::AskTimedOut => W::AskTimedOut,
        ErrorCode::EmptyQuestions => W::EmptyQuestions,
        ErrorCode::CallerNotLive => W::CallerNotLive,
        ErrorCode::DelegatedCaller => W::DelegatedCaller,
        ErrorCode::BadIntent => W::BadIntent,
        ErrorCode::NoProvider => W::NoProvider,
        ErrorCode::InvalidAnswer => W::InvalidAnswer,
        other => W::Other(other.as_str().to_owned()),
    });
    wit::AskError {
        name: error.name().to_owned(),
        code,
        message: error.message().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seam_codes_cross_as_their_own_case_and_the_rest_as_spelled() {
        for code in ErrorCode::KNOWN {
            let crossed = error_to_wit(&AskError::new(code.clone(), "m"))
                .code
                .unwrap();
            // Seam codes newer than this version cross as `other` too.
            let newer = [ErrorCode::DelegatedAskLimit].contains(code);
            let seam = code.name() == Some(ask_user_seam::error::USER_QUESTION_ERROR) && !newer;
            match crossed {
                wit::ErrorCode::Other(spelled) => {
                    assert!(!seam, "{code} has no case of its own");
                    assert_eq!(spelled, code.as_str());
                }
                named => assert!(seam, "{code} crossed as {named:?}"),
            }
        }
    }

    fn question() -> wit::Question {
        wit::Question {
            id: "plan".into(),
            question: "Approve?".into(),
            detail: None,
            header: None,
            options: Some(vec![wit::QuestionOption {
                label: "Yes".into(),
                description: None,
                extra_json: Some(r#"{"icon":"ok"}"#.into()),
            }]),
            multi_select: None,
            intent: None,
        }
    }

    #[test]
    fn a_component_may_not_set_what_only_host_askers_set() {
        let mut staged = question();
        staged.detail = Some("a plan the model wrote".into());
        let refused = request_from_wit(wit::Request {
            questions: vec![staged],
        })
        .unwrap_err();
        assert!(refused.to_string().contains("`detail`"), "{refused}");

        let mut staged = question();
        staged.intent = Some(wit::Intent::PlanReview(wit::PlanReview {
            approve: "Yes".into(),
        }));
        let refused = request_from_wit(wit::Request {
            questions: vec![staged],
        })
        .unwrap_err();
        assert!(refused.to_string().contains("`intent`"), "{refused}");
    }

    #[test]
    fn option_extras_are_kept_and_must_be_an_object() {
        let request = request_from_wit(wit::Request {
            questions: vec![question()],
        })
        .unwrap();
        let option = &request.questions[0].options.as_ref().unwrap()[0];
        assert_eq!(option.extra["icon"], "ok");

        let mut bad = question();
        bad.options.as_mut().unwrap()[0].extra_json = Some("[1]".into());
        assert!(
            request_from_wit(wit::Request {
                questions: vec![bad]
            })
            .is_err()
        );
    }
}
