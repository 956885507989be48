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

/// Set (to `1`) in the environment of a run this command serves, so that
/// the installed `PermissionRequest` hook leaves the questions to it.
pub const SERVED_ENV: &str = "ASK_USER_HEADLESS";

/// Claude Code's flags for a run served over standard input and output.
pub fn flags() -> Vec<OsString> {
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
pub fn prompt(text: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": text}}).to_string()
}

/// What one output line of the run is, as far as this command cares.
#[derive(Debug, PartialEq)]
pub enum Line {
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
    pub fn parse(line: &str) -> Line {
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
pub fn allow(request_id: &str, permission: Value) -> String {
    response(request_id, permission)
}

/// The input line that refuses permission request `request_id`, telling
/// the model `message`.
pub fn deny(request_id: &str, message: &str) -> String {
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
