//! The `inbox` seam plug: asks a person through an inbox's HTTP API over
//! `wasi:http`, as the host's `inbox` answerer does over its socket: the
//! ask (`POST /api/questions`), long waits for its outcome (`GET
//! /api/questions/{id}?wait=…`), the delivery confirmed, and the question
//! withdrawn when the call's time limit passes.
//!
//! Configured from the environment the runtime grants
//! ([`Settings::from_env`]): the inbox's address and an agent's token. The
//! runtime must grant outgoing HTTP to that address and nothing else is
//! needed; the plug reads no file and opens no other connection.
//!
//! What a person or the network causes maps onto the seam's codes: an
//! answer is the answers; dismissed, `ASK_CANCELLED` (the inbox's own
//! error); expired, or the time limit passed, `ASK_TIMED_OUT`; withdrawn by
//! someone else, `ASK_ABORTED`; no inbox at the address, a token refused
//! or revoked, `NO_PROVIDER`, saying which. Once the question is in the
//! inbox, a connection lost is tried again (every second at most) until
//! the time limit: the question is kept there and will be answered.

mod http;

use std::time::Duration;

use ask_user_plug::{Answer, AskError, ErrorCode, Guest, Request, error};
use serde_json::{Value, json};

use http::{Failure, Http};

/// One wait's length: the inbox replies within it even with no news.
const WAIT: Duration = Duration::from_secs(25);

/// The longest pause between two tries to reach an inbox that went away.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What the plug reads from the environment.
struct Settings {
    /// `ASK_USER_INBOX_URL`: the inbox's address, `http://…` or `https://…`.
    url: String,
    /// `ASK_USER_AGENT_TOKEN`: an agent's token of that inbox.
    token: String,
    /// `ASK_USER_AGENT`: how the inbox names the asker (default
    /// `wasm component`).
    agent: String,
    /// `ASK_USER_SESSION`: the session its questions belong to (default: a
    /// random one per call, so nothing of another run is re-attached).
    session: String,
    /// `ASK_USER_AUDIENCE`: in a team's inbox, the groups whose people may
    /// answer, comma-separated (default: anyone in the team).
    audience: Vec<String>,
    /// `ASK_USER_TIMEOUT`: seconds the call waits for a person (default:
    /// until answered).
    timeout: Option<Duration>,
}

impl Settings {
    fn from_env() -> Result<Settings, AskError> {
        let required = |name: &str, what: &str| {
            std::env::var(name)
                .ok()
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
                .ok_or_else(|| {
                    error(
                        ErrorCode::NoProvider,
                        format!(
                            "no inbox to ask: {name} is not set; give the runtime {what} in it \
                             (with wasmtime: --env {name}=…)"
                        ),
                    )
                })
        };
        let url = required(
            "ASK_USER_INBOX_URL",
            "the inbox's address (http://HOST:PORT)",
        )?;
        let token = required(
            "ASK_USER_AGENT_TOKEN",
            "an agent's token (ask-user inbox token create NAME --role agent)",
        )?;
        let timeout = match std::env::var("ASK_USER_TIMEOUT") {
            Err(_) => None,
            Ok(text) => Some(
                text.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| {
                        error(
                            ErrorCode::NoProvider,
                            format!(
                                "ASK_USER_TIMEOUT is {text:?}: give the seconds to wait for a \
                                 person, a positive number, or leave it unset to wait until \
                                 answered"
                            ),
                        )
                    })?,
            ),
        };
        Ok(Settings {
            url,
            token,
            agent: std::env::var("ASK_USER_AGENT").unwrap_or_else(|_| "wasm component".into()),
            session: std::env::var("ASK_USER_SESSION").unwrap_or_else(|_| {
                let random = wasip2::random::random::get_random_u64();
                format!("wasm-{random:016x}")
            }),
            audience: std::env::var("ASK_USER_AUDIENCE")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|group| !group.is_empty())
                .map(str::to_owned)
                .collect(),
            timeout,
        })
    }
}

struct Plug;

impl Guest for Plug {
    fn ask(request: Request) -> Result<Vec<Answer>, AskError> {
        let settings = Settings::from_env()?;
        let http = Http::new(&settings.url, &settings.token)
            .map_err(|why| error(ErrorCode::NoProvider, format!("ASK_USER_INBOX_URL: {why}")))?;
        let deadline = settings.timeout.map(|timeout| http::now() + timeout);
        let body = json!({
            "session": settings.session,
            "agent": settings.agent,
            "request": ask_user_plug::request_to_value(&request),
            "audience": settings.audience,
        });
        loop {
            let id = ask(&http, &body)?;
            match wait(&http, &id, deadline)? {
                Some(view) => return outcome(&http, &id, view),
                // The inbox forgot it (a new database): ask again.
                None => continue,
            }
        }
    }
}

/// Puts the question in the inbox; its id.
fn ask(http: &Http, body: &Value) -> Result<String, AskError> {
    let reply = http
        .send("POST", "/api/questions", Some(body), http::SHORT)
        .map_err(|failure| refused(http, failure))?;
    reply
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            error(
                ErrorCode::NoProvider,
                format!("{} replied to the ask without a question id", http.url()),
            )
        })
}

/// Waits until question `id` leaves the waiting state: its view, or `None`
/// when the inbox no longer has it.
fn wait(http: &Http, id: &str, deadline: Option<Duration>) -> Result<Option<Value>, AskError> {
    let mut pause = Duration::from_millis(50);
    loop {
        let wait = match deadline.map(|deadline| deadline.saturating_sub(http::now())) {
            Some(left) if left.is_zero() => {
                let _ = http.send(
                    "POST",
                    &format!("/api/questions/{id}/withdraw"),
                    Some(&json!({"reason": "the call's time limit passed"})),
                    http::SHORT,
                );
                return Err(error(
                    ErrorCode::AskTimedOut,
                    "nobody answered in the inbox within the call's time limit \
                     (ASK_USER_TIMEOUT); the question was withdrawn",
                ));
            }
            Some(left) => left.min(WAIT),
            None => WAIT,
        };
        let path = format!("/api/questions/{id}?wait={}", wait.as_secs_f64());
        match http.send("GET", &path, None, wait + http::SHORT) {
            Ok(view) if view.get("state").and_then(Value::as_str) == Some("waiting") => {
                pause = Duration::from_millis(50);
            }
            Ok(view) => return Ok(Some(view)),
            Err(Failure::Status { status: 404, .. }) => return Ok(None),
            // Down or restarting: the question is kept there; try again.
            Err(Failure::Unreachable(_) | Failure::Status { status: 503, .. }) => {
                http::sleep(pause);
                pause = (pause * 2).min(MAX_BACKOFF);
            }
            Err(failure) => return Err(refused(http, failure)),
        }
    }
}

/// What a question that left the waiting state gives the call.
fn outcome(http: &Http, id: &str, view: Value) -> Result<Vec<Answer>, AskError> {
    let state = view.get("state").and_then(Value::as_str).unwrap_or("");
    let mut outcome = view.get("outcome").cloned().unwrap_or(Value::Null);
    match outcome.get("kind").and_then(Value::as_str) {
        Some("result") => {
            let answers =
                ask_user_plug::answers_from_value(outcome["value"].take()).map_err(|e| {
                    error(
                        ErrorCode::InvalidAnswer,
                        format!("the inbox's answers are not answers ({e})"),
                    )
                })?;
            // Unconfirmed, the same batch asked again would get them again.
            let _ = http.send(
                "POST",
                &format!("/api/questions/{id}/delivered"),
                None,
                http::SHORT,
            );
            Ok(answers)
        }
        Some("rejected") => Err(ask_user_plug::error_from_value(outcome["error"].take())),
        _ => Err(match state {
            "expired" => error(
                ErrorCode::AskTimedOut,
                "the question expired in the inbox before anyone answered",
            ),
            "withdrawn" => error(
                ErrorCode::AskAborted,
                "the question was withdrawn from the inbox before anyone answered",
            ),
            other => error(
                ErrorCode::NoProvider,
                format!("the question left the inbox {other:?} without an answer"),
            ),
        }),
    }
}

/// The error a refused or failed request ends the ask with.
fn refused(http: &Http, failure: Failure) -> AskError {
    let url = http.url();
    error(
        ErrorCode::NoProvider,
        match failure {
            Failure::Unreachable(why) => {
                format!("no inbox answers at {url} ({why}); start it, or check ASK_USER_INBOX_URL")
            }
            Failure::Status { status: 401, body } => format!(
                "the inbox at {url} refused the agent's token ({}): give ASK_USER_AGENT_TOKEN \
                 a token of its own (ask-user inbox token create NAME --role agent)",
                said(&body)
            ),
            Failure::Status { status, body } => {
                format!("the inbox at {url} refused ({status}): {}", said(&body))
            }
            Failure::Reply(why) => format!("the inbox at {url} replied with {why}"),
        },
    )
}

/// What a refusal's body says: the inbox's `{"error": {"message"}}`, or the
/// body as it came (an older inbox's text, a proxy's page).
fn said(body: &str) -> String {
    let refusal: Option<Value> = serde_json::from_str(body).ok();
    let message = refusal
        .as_ref()
        .and_then(|r| r["error"]["message"].as_str());
    message.unwrap_or(body.trim()).to_owned()
}

ask_user_plug::export_plug!(Plug with_types_in ask_user_plug);
