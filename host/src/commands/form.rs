//! `ask-user form`: the form a batch becomes in a client's own UI (the one
//! `ask-user mcp` sends an MCP client, and the `acp` answerer an ACP
//! editor), and a form's content back as answers, for a host in another
//! language whose answerer sends the form itself (the Python and
//! JavaScript packages' ACP examples): the same layout, not a copy of it.

use std::path::Path;
use std::process::ExitCode;

use ask_user::answerers::form::{Form, Renders};
use ask_user::{AskError, AskRequest};
use clap::Subcommand;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::ask::read_arguments;
use super::{CliError, Exit, emit};

/// The largest input read: the most questions one call may ask, and their
/// answers.
const MAX_INPUT_BYTES: usize = 4 << 20;

/// What a form shows: lists for multi-select questions, and any field may
/// be left empty (ACP's forms, and MCP's since protocol 2025-11-25).
const RENDERS: Renders = Renders {
    arrays: true,
    text_last: true,
};

#[derive(Subcommand)]
pub enum Command {
    /// Print the form of the batch on standard input (the answerers'
    /// request: {"questions": [...], "askedBy"?: [...]}) as
    /// {"message", "requestedSchema"}.
    Schema,
    /// Print the answers in an accepted form's content (standard input:
    /// {"request": {...}, "content": {...}}) as {"answers": [...]}; a
    /// content that answers nothing, or a field of the wrong shape, prints
    /// {"error": {"code", "message"}} and exits 1.
    Answers,
}

/// The answerers' request, with who asks when a sub-agent does.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    #[serde(flatten)]
    request: AskRequest,
    #[serde(default)]
    asked_by: Vec<String>,
}

#[derive(Deserialize)]
struct Answered {
    request: Request,
    content: Map<String, Value>,
}

pub fn run(command: Command) -> Exit {
    let input = read_arguments(Path::new("-"), MAX_INPUT_BYTES)?;
    let read = |what: &str, e: serde_json::Error| {
        CliError::new(format!("standard input is not {what}: {e}"))
    };
    match command {
        Command::Schema => {
            let request: Request = serde_json::from_slice(&input)
                .map_err(|e| read("a request ({\"questions\": [...]})", e))?;
            let form = form(&request);
            emit(&json!({"message": form.message(), "requestedSchema": form.schema()}))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Answers => {
            let answered: Answered = serde_json::from_slice(&input)
                .map_err(|e| read("{\"request\": {...}, \"content\": {...}}", e))?;
            match form(&answered.request).answers(&answered.content) {
                Ok(answers) => {
                    emit(&json!({"answers": answers}))?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(error) => {
                    emit(&json!({"error": error_of(&error)}))?;
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}

fn form(request: &Request) -> Form<'_> {
    let asked_by = (!request.asked_by.is_empty()).then(|| request.asked_by.join(" › "));
    Form::new(&request.request, RENDERS).asked_by(asked_by)
}

fn error_of(error: &AskError) -> Value {
    json!({"code": error.code().map(|code| code.as_str()), "message": error.message()})
}
