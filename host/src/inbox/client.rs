//! Reaching the inbox: its address and token come from the endpoint file in
//! the state directory, read again for every request, so a client follows
//! an inbox that restarted (on another port, say) without being told.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use ask_user_seam::Answer;

use super::{AskBody, AskReply, Endpoint, QuestionList, QuestionView, WithdrawBody};

/// How long a request other than a wait may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request to the inbox failed.
#[derive(Debug)]
pub enum ClientError {
    /// No inbox answered (none running, restarting, no endpoint file): it
    /// may answer later.
    Unreachable(String),
    /// The inbox refused the request; `message` says why.
    Refused { status: u16, message: String },
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Unreachable(why) => write!(f, "the inbox cannot be reached: {why}"),
            ClientError::Refused { status, message } => {
                write!(f, "the inbox refused ({status}): {message}")
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// A client of the inbox of one state directory.
#[derive(Clone)]
pub struct InboxClient {
    state_dir: PathBuf,
    http: reqwest::Client,
}

impl InboxClient {
    /// A client of the inbox that serves from `state_dir`.
    pub fn new(state_dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        Ok(InboxClient {
            state_dir: state_dir.into(),
            http: super::http_client()?,
        })
    }

    /// The endpoint the inbox wrote last.
    pub fn endpoint(&self) -> Result<Endpoint, ClientError> {
        Endpoint::read(&self.state_dir).map_err(|e| ClientError::Unreachable(e.to_string()))
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        timeout: Duration,
    ) -> Result<String, ClientError> {
        let endpoint = self.endpoint()?;
        let mut request = self
            .http
            .request(method, format!("{}{path}", endpoint.url))
            .bearer_auth(&endpoint.token)
            .timeout(timeout);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| ClientError::Unreachable(plain(&e)))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| ClientError::Unreachable(plain(&e)))?;
        if status.is_success() {
            Ok(text)
        } else if status == StatusCode::SERVICE_UNAVAILABLE {
            Err(ClientError::Unreachable(text))
        } else {
            Err(ClientError::Refused {
                status: status.as_u16(),
                message: text,
            })
        }
    }

    async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        timeout: Duration,
    ) -> Result<T, ClientError> {
        let text = self.call(method, path, body, timeout).await?;
        serde_json::from_str(&text).map_err(|e| ClientError::Refused {
            status: 200,
            message: format!("a reply that is not what the inbox sends ({e})"),
        })
    }

    /// Asks: stores the question (or re-attaches to the same batch of the
    /// same session) and returns its id.
    pub async fn ask(&self, body: &AskBody) -> Result<AskReply, ClientError> {
        let body = serde_json::to_string(body).expect("asks are plain JSON");
        self.json(Method::POST, "/api/questions", Some(body), REQUEST_TIMEOUT)
            .await
    }

    /// The question `id`; with `wait`, once it has left the waiting state
    /// or after `wait` (at most a minute). `None`: the inbox has no such
    /// question.
    pub async fn question(
        &self,
        id: &str,
        wait: Duration,
    ) -> Result<Option<QuestionView>, ClientError> {
        let path = format!("/api/questions/{id}?wait={}", wait.as_secs_f64());
        match self
            .json(Method::GET, &path, None, wait + REQUEST_TIMEOUT)
            .await
        {
            Err(ClientError::Refused { status: 404, .. }) => Ok(None),
            other => other.map(Some),
        }
    }

    /// The waiting questions; with `all`, also the recent ones that left.
    pub async fn list(&self, all: bool) -> Result<Vec<QuestionView>, ClientError> {
        let list: QuestionList = self
            .json(
                Method::GET,
                &format!("/api/questions?all={all}"),
                None,
                REQUEST_TIMEOUT,
            )
            .await?;
        Ok(list.questions)
    }

    /// Answers `id` (checked against its questions by the inbox).
    pub async fn answer(&self, id: &str, answers: &[Answer]) -> Result<(), ClientError> {
        let body = serde_json::json!({ "answers": answers }).to_string();
        self.call(
            Method::POST,
            &format!("/api/questions/{id}/answer"),
            Some(body),
            REQUEST_TIMEOUT,
        )
        .await
        .map(drop)
    }

    /// Says that the outcome of `id` reached its agent.
    pub async fn delivered(&self, id: &str) -> Result<(), ClientError> {
        self.call(
            Method::POST,
            &format!("/api/questions/{id}/delivered"),
            None,
            REQUEST_TIMEOUT,
        )
        .await
        .map(drop)
    }

    /// Withdraws `id`: its agent stopped waiting.
    pub async fn withdraw(&self, id: &str, reason: &str) -> Result<(), ClientError> {
        let body = serde_json::to_string(&WithdrawBody {
            reason: reason.to_owned(),
        })
        .expect("plain JSON");
        self.call(
            Method::POST,
            &format!("/api/questions/{id}/withdraw"),
            Some(body),
            REQUEST_TIMEOUT,
        )
        .await
        .map(drop)
    }
}

/// An HTTP error with its causes, on one line.
fn plain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}
