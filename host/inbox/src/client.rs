//! Reaching the inbox. One user's: through its socket in the state
//! directory, and only when this user alone controls that folder and the
//! socket in it (checked before every request). A team's: at its URL, with
//! a token ([`InboxClient::remote`]).
//!
//! One user's inbox is reached A socket there can have been made by nobody but
//! this user, so no secret is needed, and none is ever sent to a server
//! that could be someone else's: a folder another user made (a shared
//! `ASK_USER_STATE_DIR` under /tmp), or one others may write, is refused,
//! and nothing is sent. An inbox that stopped leaves nothing another user
//! could answer from.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use ask_user_seam::Answer;
use ask_user_web::refusal::message_of;

use crate::{AskBody, AskReply, PageLink, QuestionList, QuestionView, SOCKET_FILE, WithdrawBody};

/// How long a request other than a wait may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request to the inbox failed.
#[derive(Debug)]
pub enum ClientError {
    /// No inbox answered (none running, restarting): it may answer later.
    Unreachable(String),
    /// The state directory or its socket is not this user's alone: nothing
    /// was sent, and nothing will be until that changes.
    Untrusted(String),
    /// The inbox refused the request; `message` says why.
    Refused { status: u16, message: String },
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Unreachable(why) => write!(f, "the inbox cannot be reached: {why}"),
            ClientError::Untrusted(why) => write!(f, "the inbox is not used: {why}"),
            ClientError::Refused { status, message } => {
                write!(f, "the inbox refused ({status}): {message}")
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// A client of one inbox.
#[derive(Clone)]
pub struct InboxClient {
    reach: Reach,
    /// Its HTTP client: a team's; for one user's, the one on the socket at
    /// the path the state folder resolved to when last checked (with that
    /// path), so that no link swapped after the check is followed.
    http: Arc<Mutex<(Option<PathBuf>, reqwest::Client)>>,
}

/// Where the inbox is.
#[derive(Clone)]
enum Reach {
    /// One user's, serving from this state directory.
    Socket(PathBuf),
    /// A team's, at this URL (no trailing `/`), to this token.
    Remote { url: String, token: String },
}

impl InboxClient {
    /// A client of the inbox that serves from `state_dir`.
    pub fn new(state_dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        Ok(InboxClient {
            http: Arc::new(Mutex::new((None, crate::http_client(None)?))),
            reach: Reach::Socket(state_dir.into()),
        })
    }

    /// A client of the team's inbox at `url` (`http://…` or `https://…`,
    /// one server or a load balancer), presenting `token`.
    pub fn remote(url: &str, token: String) -> std::io::Result<Self> {
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the inbox's url {url:?} is not a URL: {e}"),
            )
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("the inbox's url {url:?} is not http:// or https://"),
            ));
        }
        Ok(InboxClient {
            http: Arc::new(Mutex::new((None, crate::http_client(None)?))),
            reach: Reach::Remote {
                url: url.trim_end_matches('/').to_owned(),
                token,
            },
        })
    }

    /// Whether the inbox's socket may be used: the folder is this user's
    /// alone ([`ask_user_seam::files::trusted_dir`]) and the socket in it is a
    /// socket of this user's. A folder or socket that is not there is an
    /// inbox not running.
    pub fn check(&self) -> Result<(), ClientError> {
        self.socket().map(drop)
    }

    /// The socket to use, as resolved and checked ([`check`](Self::check));
    /// `None` for a team's inbox.
    fn socket(&self) -> Result<Option<PathBuf>, ClientError> {
        let Reach::Socket(dir) = &self.reach else {
            return Ok(None);
        };
        let not_running = || ClientError::Unreachable(self.not_running());
        if !dir.exists() {
            return Err(not_running());
        }
        let dir = ask_user_seam::files::trusted_dir(dir)
            .map_err(|e| ClientError::Untrusted(e.to_string()))?;
        let socket = dir.join(SOCKET_FILE);
        match std::fs::symlink_metadata(&socket) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(not_running()),
            Err(e) => Err(ClientError::Unreachable(format!(
                "cannot read {}: {e}",
                socket.display()
            ))),
            Ok(metadata)
                if metadata.file_type().is_socket()
                    && metadata.uid() == ask_user_seam::files::me() =>
            {
                Ok(Some(socket))
            }
            Ok(metadata) => Err(ClientError::Untrusted(format!(
                "{} is not a socket of this user's (owner {}); nothing was sent to it",
                socket.display(),
                metadata.uid()
            ))),
        }
    }

    fn not_running(&self) -> String {
        match &self.reach {
            Reach::Socket(dir) => format!(
                "no inbox is running for {}; start one with `ask-user inbox serve`",
                dir.display()
            ),
            Reach::Remote { url, .. } => format!("no inbox answers at {url}"),
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<String>,
        timeout: Duration,
    ) -> Result<String, ClientError> {
        let socket = self.socket()?;
        let http = {
            let mut http = self.http.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(socket) = socket.filter(|socket| http.0.as_ref() != Some(socket)) {
                let client = crate::http_client(Some(&socket))
                    .map_err(|e| ClientError::Unreachable(e.to_string()))?;
                *http = (Some(socket), client);
            }
            http.1.clone()
        };
        let mut request = match &self.reach {
            // The host is a name only: the connection is the socket's.
            Reach::Socket(_) => http.request(method, format!("http://inbox{path}")),
            Reach::Remote { url, token } => http
                .request(method, format!("{url}{path}"))
                .bearer_auth(token),
        }
        .timeout(timeout);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request.send().await.map_err(|e| {
            ClientError::Unreachable(match e.is_connect() {
                // A socket left by an inbox that stopped.
                true => self.not_running(),
                false => plain(&e),
            })
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| ClientError::Unreachable(plain(&e)))?;
        if status.is_success() {
            Ok(text)
        } else if status == StatusCode::SERVICE_UNAVAILABLE {
            Err(ClientError::Unreachable(message_of(&text)))
        } else {
            Err(ClientError::Refused {
                status: status.as_u16(),
                message: message_of(&text),
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
    pub async fn list(&self, all: bool) -> Result<QuestionList, ClientError> {
        self.json(
            Method::GET,
            &format!("/api/questions?all={all}"),
            None,
            REQUEST_TIMEOUT,
        )
        .await
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

    /// Dismisses `id`: its agent is told the person will not answer.
    pub async fn dismiss(&self, id: &str) -> Result<(), ClientError> {
        self.call(
            Method::POST,
            &format!("/api/questions/{id}/dismiss"),
            None,
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

    /// A new one-time link to the inbox's page.
    pub async fn page_link(&self) -> Result<String, ClientError> {
        let link: PageLink = self
            .json(Method::POST, "/api/page", None, REQUEST_TIMEOUT)
            .await?;
        Ok(link.url)
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
