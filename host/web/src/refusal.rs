//! How a page's or an API's request is refused: a status and one JSON
//! body, `{"error": {"code": "...", "message": "..."}}`, whose `code` a
//! program reads (it stays the same across versions) and whose `message`
//! a person does (it says what to do). [`message_of`] reads one back, and
//! takes any other body (a proxy's page, an older inbox's text) as its
//! message.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// The refusal of a request: `status`, with `code` and `message` in the
/// body.
pub fn refusal(status: StatusCode, code: &'static str, message: impl Into<String>) -> Response {
    let body = Body {
        error: Error {
            code: code.into(),
            message: message.into(),
        },
    };
    (status, axum::Json(body)).into_response()
}

/// The body of a refusal.
#[derive(Serialize, Deserialize)]
struct Body {
    error: Error,
}

#[derive(Serialize, Deserialize)]
struct Error {
    code: String,
    message: String,
}

/// The message of a refusal's `body`: its `error.message`, or the body
/// itself, trimmed, when it is not a refusal of ours.
pub fn message_of(body: &str) -> String {
    match serde_json::from_str::<Body>(body) {
        Ok(refusal) => refusal.error.message,
        Err(_) => body.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_is_json_with_a_code_and_reads_back_as_its_message() {
        let refused = refusal(StatusCode::CONFLICT, "not_pending", "already \"answered\"");
        assert_eq!(refused.status(), StatusCode::CONFLICT);
        assert_eq!(
            refused.headers()["content-type"],
            "application/json",
            "a program can tell it is JSON"
        );
        let body = axum::body::to_bytes(refused.into_body(), 1 << 16)
            .await
            .unwrap();
        let body = std::str::from_utf8(&body).unwrap();
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(value["error"]["code"], "not_pending");
        assert_eq!(message_of(body), "already \"answered\"");
        assert_eq!(message_of(" Bad Gateway\n"), "Bad Gateway");
    }
}
