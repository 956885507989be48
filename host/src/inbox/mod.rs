//! The inbox: one local service that holds the pending questions of every
//! agent process of this user, durably, and answers them from one page.
//!
//! - [`server`]: `ask-user inbox serve`, the service: its store
//!   ([`store`], SQLite), its HTTP API for agents and commands, the answer
//!   page of every session, notifications ([`notify`]) and retention.
//! - [`client`]: how agents and commands reach it (the address and token
//!   it leaves in the state directory, [`Endpoint`]).
//! - [`answerer`]: the answerer of kind `inbox`, which sends an ask to the
//!   inbox and waits for its outcome, through restarts of either side.
//!
//! The state directory is `$ASK_USER_STATE_DIR`, else
//! `$XDG_STATE_HOME/ask-user`, else `~/.local/state/ask-user`, made mode
//! 0700 and refused when others may write it; its files are mode 0600, so
//! another user on the machine can neither read the token nor answer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use ask_user_seam::{AskRequest, Question};

pub mod answerer;
pub mod client;
pub mod notify;
pub mod server;
pub mod store;

pub use answerer::{InboxAnswerer, InboxKind};
pub use client::{ClientError, InboxClient};
pub use server::{InboxConfig, InboxServer};

/// The file in the state directory that says where the inbox serves.
pub const ENDPOINT_FILE: &str = "inbox.json";

/// The database file in the state directory.
pub const DATABASE_FILE: &str = "inbox.sqlite";

/// How long a question whose agent is gone stays answerable by default.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// The state directory (module docs); `None` when no variable says and
/// there is no home directory.
pub fn state_dir() -> Option<PathBuf> {
    std::env::var_os("ASK_USER_STATE_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| crate::config::user_dir("XDG_STATE_HOME", ".local/state"))
}

/// Where a running inbox serves and its token, as written in
/// [`ENDPOINT_FILE`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Endpoint {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    pub token: String,
    pub pid: u32,
}

impl Endpoint {
    /// The endpoint in `dir`; an error says what to do.
    pub fn read(dir: &Path) -> std::io::Result<Endpoint> {
        let path = dir.join(ENDPOINT_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "no inbox is running for {} ({e}); start one with `ask-user inbox serve`",
                    dir.display()
                ),
            )
        })?;
        serde_json::from_str(&text).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not an inbox endpoint: {e}", path.display()),
            )
        })
    }

    /// Writes it to `dir` (mode 0600, replacing the file whole).
    fn write(&self, dir: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let mut aside = tempfile::NamedTempFile::new_in(dir)?;
        aside
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
        aside.write_all(serde_json::to_string(self)?.as_bytes())?;
        aside.as_file().sync_all()?;
        aside
            .persist(dir.join(ENDPOINT_FILE))
            .map_err(|e| e.error)?;
        Ok(())
    }

    /// The answer page's address, token included.
    pub fn page(&self) -> String {
        format!("{}/?token={}", self.url, self.token)
    }
}

/// What an agent sends to ask (`POST /api/questions`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskBody {
    /// The root agent's session key.
    pub session: String,
    /// What asks, in the host's words.
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub request: AskRequest,
}

/// The reply to an ask.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskReply {
    pub id: String,
    /// The same session asked the identical batch before and it is still
    /// open, or answered while its agent was away: this is that question.
    pub reattached: bool,
}

/// A question as the inbox shows it (`GET /api/questions`, `inbox list --json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuestionView {
    pub id: String,
    pub session: String,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// RFC 3339, UTC.
    pub asked_at: String,
    /// `waiting`, `answered`, `cancelled`, `withdrawn` or `expired`.
    pub state: String,
    /// Whether its agent is waiting for it now (false: the agent is gone,
    /// or has not come back since the inbox restarted).
    pub agent_waiting: bool,
    pub questions: Vec<Question>,
    /// The outcome frame's `outcome` (SPEC §5), once a human settled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Value>,
    /// Where it was settled (`page`, `command`) or why it left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<String>,
}

/// The list (`GET /api/questions`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuestionList {
    pub questions: Vec<QuestionView>,
}

/// Why a question is withdrawn (`POST /api/questions/{id}/withdraw`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithdrawBody {
    pub reason: String,
}

/// An HTTP client for the inbox and the notifiers (HTTPS through rustls).
pub(crate) fn http_client() -> std::io::Result<reqwest::Client> {
    // One crypto provider for the process; a second install is refused,
    // and the first stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        // Shorter than the servers' idle limit (10 s), so that a pooled
        // connection is not reused just as the server closes it.
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| std::io::Error::other(format!("cannot make an HTTP client: {e}")))
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn now() -> store::Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as store::Millis)
}

/// `millis` as RFC 3339, UTC, to the second.
pub(crate) fn rfc3339(millis: store::Millis) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
    humantime::format_rfc3339_seconds(at).to_string()
}
