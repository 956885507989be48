//! A headless Claude Code run whose questions reach a person:
//! `ask-user hook headless claude-code PROMPT`.
//!
//! `claude -p` offers no `AskUserQuestion` unless something answers its
//! permission requests (`--permission-prompt-tool stdio`), and over stdio it
//! reads the prompt and the answers as JSON lines on standard input, which
//! must stay open until the run's result. This module speaks that protocol
//! (the one the Agent SDKs speak): the run's lines are read as [`Line`]s,
//! and each permission request is answered with [`allow`] or [`deny`]. The
//! questions themselves go through the user's answerers (the inbox, a
//! script…); any other tool is denied unless the run's own flags allow it.

use std::ffi::OsString;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::ClaudeCode;
use super::input::{Asked, TOOL, asker};
use crate::hook::{Answerers, Headless};
use crate::{CliError, Context};

/// Set (to `1`) in the environment of a run this command serves, so that
/// the installed `PermissionRequest` hook leaves the questions to it.
pub const SERVED_ENV: &str = "ASK_USER_HEADLESS";

/// Claude Code's flags for a run served over standard input and output.
fn flags() -> Vec<OsString> {
    [
        "-p",
        "--permission-prompt-tool",
        "stdio",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ]
    .map(OsString::from)
    .to_vec()
}

/// The prompt as the run's first input line.
fn prompt(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": text}}).to_string()
}

/// What one output line of the run is, as far as this command cares.
#[derive(Debug, PartialEq)]
enum Line {
    /// The run asks whether `tool` may run with `input`.
    Permission {
        request_id: String,
        tool: String,
        input: Value,
    },
    /// The run's end: the model's last text, or what went wrong.
    Result { text: String, is_error: bool },
    /// Anything else (messages, progress, a cancelled request).
    Other,
}

impl Line {
    /// Reads one line of the run's output; a line that is not JSON is
    /// [`Line::Other`].
    fn parse(line: &str) -> Line {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return Line::Other;
        };
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        match value.get("type").and_then(Value::as_str) {
            Some("control_request") => {
                let request = &value["request"];
                if request.get("subtype").and_then(Value::as_str) != Some("can_use_tool") {
                    return Line::Other;
                }
                match (text(&value, "request_id"), text(request, "tool_name")) {
                    (Some(request_id), Some(tool)) => Line::Permission {
                        request_id,
                        tool,
                        input: request.get("input").cloned().unwrap_or(Value::Null),
                    },
                    _ => Line::Other,
                }
            }
            Some("result") => Line::Result {
                is_error: value.get("is_error").and_then(Value::as_bool) == Some(true),
                text: text(&value, "result")
                    .or_else(|| text(&value, "subtype"))
                    .unwrap_or_default(),
            },
            _ => Line::Other,
        }
    }
}

/// The input line that answers permission request `request_id` with
/// `permission` (`{"behavior": "allow", "updatedInput": …}`).
fn allow(request_id: &str, permission: Value) -> String {
    response(request_id, permission)
}

/// The input line that refuses permission request `request_id`, telling
/// the model `message`.
fn deny(request_id: &str, message: &str) -> String {
    response(request_id, json!({"behavior": "deny", "message": message}))
}

fn response(request_id: &str, permission: Value) -> String {
    json!({"type": "control_response", "response": {
        "subtype": "success",
        "request_id": request_id,
        "response": permission,
    }})
    .to_string()
}

/// Runs Claude Code headless on `run.prompt`, with its standard input and
/// output ours, answering its questions through `answerers`; prints its
/// last message (or every JSON line). Whether the run succeeded.
pub async fn run(
    run: Headless,
    answerers: &dyn Answerers,
    stop: CancellationToken,
) -> Result<bool, CliError> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(&run.program)
        .args(flags())
        .args(&run.flags)
        .env(SERVED_ENV, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context(|| format!("cannot run {}", run.program.display()))?;
    let mut input = child.stdin.take().expect("piped");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let cwd = std::env::current_dir()
        .ok()
        .map(|dir| dir.display().to_string());
    // No terminal here: a question waits for the inbox to serve.
    let asker = asker(cwd.as_deref(), None, ask_user_inbox::WhenDown::Wait);
    // The run's questions show together, as one session's.
    let session = ask_user_seam::secret::token()?;
    let send = async |input: &mut tokio::process::ChildStdin, line: String| {
        input.write_all(format!("{line}\n").as_bytes()).await
    };
    let lost = |e: std::io::Error| CliError::new(format!("lost Claude Code's run: {e}"));
    send(&mut input, prompt(&run.prompt)).await.map_err(lost)?;
    let (text, is_error) = loop {
        let line = tokio::select! {
            line = lines.next_line() => line.map_err(lost)?,
            () = stop.cancelled() => return Err(CliError::new("stopped")),
        };
        let Some(line) = line else {
            break (String::new(), true);
        };
        if run.json {
            println!("{line}");
        }
        let reply = match Line::parse(&line) {
            Line::Result { text, is_error } => break (text, is_error),
            Line::Other => continue,
            Line::Permission {
                request_id, tool, ..
            } if tool != TOOL => deny(
                &request_id,
                &format!(
                    "{tool} was not allowed for this headless run: nobody is asked for \
                     permission here (allow it with --allowedTools)"
                ),
            ),
            Line::Permission {
                request_id, input, ..
            } => 'reply: {
                // One request we cannot read is refused alone; the run goes on.
                let asked = match Asked::from_tool_input(&input) {
                    Ok(asked) => asked,
                    Err(problem) => {
                        answerers.say(&format!("refused a question of the run: {problem}"));
                        break 'reply deny(
                            &request_id,
                            &format!(
                                "the questions could not be read ({problem}): nobody was asked. \
                                 Ask again with questions of the tool's schema"
                            ),
                        );
                    }
                };
                let request = asked.request.clone();
                match answerers
                    .ask(&ClaudeCode, Some(&session), asker.clone(), request, &stop)
                    .await?
                {
                    Some(Ok(answers)) => allow(&request_id, asked.allow(&answers)),
                    Some(Err(error)) => {
                        deny(&request_id, &format!("the user did not answer: {error}"))
                    }
                    None => deny(
                        &request_id,
                        "nobody can be asked: the ask-user config names no answerer but the \
                         terminal, and a headless run has none",
                    ),
                }
            }
        };
        send(&mut input, reply).await.map_err(lost)?;
    };
    // Its input ends with the run, and so does it.
    drop(input);
    let status = child.wait().await.map_err(lost)?;
    if !run.json {
        println!("{text}");
    }
    Ok(!is_error && status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_requests_and_the_result_are_read_and_the_rest_passes() {
        let line = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[]}}}"#;
        assert_eq!(
            Line::parse(line),
            Line::Permission {
                request_id: "r1".into(),
                tool: "AskUserQuestion".into(),
                input: json!({"questions": []}),
            }
        );
        assert_eq!(
            Line::parse(
                r#"{"type":"result","subtype":"success","is_error":false,"result":"Done."}"#
            ),
            Line::Result {
                text: "Done.".into(),
                is_error: false
            }
        );
        assert_eq!(
            Line::parse(r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#),
            Line::Result {
                text: "error_max_turns".into(),
                is_error: true
            }
        );
        for other in [
            r#"{"type":"control_cancel_request","request_id":"r1"}"#,
            r#"{"type":"control_request","request_id":"r2","request":{"subtype":"interrupt"}}"#,
            r#"{"type":"assistant"}"#,
            "not json",
        ] {
            assert_eq!(Line::parse(other), Line::Other, "{other}");
        }
    }

    #[test]
    fn answers_are_control_responses() {
        let allowed: Value = serde_json::from_str(&allow(
            "r1",
            json!({"behavior": "allow", "updatedInput": {}}),
        ))
        .unwrap();
        assert_eq!(allowed["type"], "control_response");
        assert_eq!(allowed["response"]["request_id"], "r1");
        assert_eq!(allowed["response"]["response"]["behavior"], "allow");
        let denied: Value = serde_json::from_str(&deny("r2", "no")).unwrap();
        assert_eq!(
            denied["response"]["response"],
            json!({"behavior": "deny", "message": "no"})
        );
    }
}
