//! The `answers` seam plug: answers every ask from `ASK_USER_ANSWERS`, the
//! JSON of an answers file (`{"answers":[{"id":…,"selected":[…],"custom":…}]}`),
//! for tests and CI. Like the `script` answerer it claims a request only
//! when it holds an answer for every question; otherwise the ask ends
//! `NO_PROVIDER`, naming the question it has no answer for.

use ask_user_plug::{Answer, AskError, ErrorCode, Guest, Request, error};

/// The variable that holds the answers.
const VARIABLE: &str = "ASK_USER_ANSWERS";

struct Plug;

impl Guest for Plug {
    fn ask(request: Request) -> Result<Vec<Answer>, AskError> {
        let Ok(text) = std::env::var(VARIABLE) else {
            return Err(error(
                ErrorCode::NoProvider,
                format!(
                    "no answers: {VARIABLE} is not set; give the runtime the answers file's JSON \
                     in it (with wasmtime: --env {VARIABLE}=\"$(cat answers.json)\")"
                ),
            ));
        };
        let answers = ask_user_plug::answers_from_json(&text).map_err(|e| {
            error(
                ErrorCode::NoProvider,
                format!(
                    "{VARIABLE} is not an answers file's JSON ({e}); it must be \
                     {{\"answers\":[{{\"id\":…,\"selected\":[…],\"custom\":…}}]}}"
                ),
            )
        })?;
        if let Some(id) = ask_user_plug::unanswered(&request, &answers) {
            return Err(error(
                ErrorCode::NoProvider,
                format!("{VARIABLE} holds no answer for question {id:?}"),
            ));
        }
        Ok(answers
            .into_iter()
            .filter(|a| request.questions.iter().any(|q| q.id == a.id))
            .collect())
    }
}

ask_user_plug::export_plug!(Plug with_types_in ask_user_plug);
