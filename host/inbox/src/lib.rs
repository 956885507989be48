//! The inbox: one local service that holds the pending questions of every
//! agent process of this user, durably, and answers them from one page.
//!
//! - [`server`]: `ask-user inbox serve`, the service: its store
//!   ([`store`], SQLite), its HTTP API for agents and commands, the answer
//!   page of every session, notifications ([`notify`]) and retention.
//! - [`client`]: how agents and commands reach it: its socket in the state
//!   directory ([`SOCKET_FILE`]), used only where this user alone controls
//!   the folder and the socket.
//! - [`answerer`]: the answerer of kind `inbox`, which sends an ask to the
//!   inbox and waits for its outcome, through restarts of either side.
//!
//! The state directory is `$ASK_USER_STATE_DIR`, else
//! `$XDG_STATE_HOME/ask-user`, else `~/.local/state/ask-user`, made mode
//! 0700 and refused, by the server and by every client, when it is not this
//! user's alone ([`ask_user_seam::files`]); its files are mode 0600, so another user
//! on the machine can neither read the questions nor answer them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use ask_user_seam::{AskRequest, Question};

mod access;
pub mod answerer;
pub mod client;
pub mod kind;
pub mod notify;
mod outbox;
pub mod server;
mod sessions;
pub mod settings;
pub mod store;
mod waiters;

pub use answerer::{InboxAnswerer, StopReason, WhenDown, sub_agents_label};
pub use client::{ClientError, InboxClient};
pub use kind::{Asker, InboxKind, OneClient};
pub use server::{InboxConfig, InboxServer};

/// The inbox's socket in the state directory: its API, for this user's
/// agents and commands.
pub const SOCKET_FILE: &str = "inbox.sock";

/// The port one user's page had at its last start, in the state
/// directory: the next start takes it again when it is free.
pub const PORT_FILE: &str = "inbox.port";

/// The database file in the state directory.
pub const DATABASE_FILE: &str = "inbox.sqlite";

/// What one user's page signs a browser in with, in the state directory
/// (mode 0600): kept, so that a restart signs no browser out. Removed, the
/// next start makes a new one, and every browser signed in before is out.
pub const PAGE_KEY_FILE: &str = "page.key";

/// What an agent is told when a person dismisses its questions (the page
/// says the same, in its own script).
pub const DISMISSED: &str = "The user dismissed the questions without answering. Do not ask the \
                             same again; continue with what you know or end your turn.";

/// How long a question whose agent is gone stays answerable by default.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// The state directory (module docs); `None` when no variable says and
/// there is no home directory.
pub fn state_dir() -> Option<PathBuf> {
    std::env::var_os("ASK_USER_STATE_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| ask_user_seam::files::user_dir("XDG_STATE_HOME", ".local/state"))
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
    /// In a team's inbox, the groups whose people may answer; empty:
    /// anyone in the team.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<String>,
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
    pub state: store::State,
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
    /// In a team's inbox, the person who answered or dismissed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<String>,
}

/// The list (`GET /api/questions`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuestionList {
    pub questions: Vec<QuestionView>,
    /// Questions this version cannot read (a newer version's, a damaged
    /// row), left out of `questions`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<UnreadableView>,
}

/// A question left out of a list, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnreadableView {
    pub id: String,
    pub why: String,
}

/// A one-time link to the page (`POST /api/page`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageLink {
    pub url: String,
}

/// Why a question is withdrawn (`POST /api/questions/{id}/withdraw`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithdrawBody {
    pub reason: String,
}

/// An HTTP client for the channels (HTTPS through rustls, on ring), or,
/// with a `socket`, for the inbox on it.
pub fn http_client(socket: Option<&Path>) -> std::io::Result<reqwest::Client> {
    // One crypto provider for the process; a second install is refused,
    // and the first stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        // Shorter than the servers' idle limit (10 s), so that a pooled
        // connection is not reused just as the server closes it.
        .pool_idle_timeout(Duration::from_secs(5));
    let builder = match socket {
        Some(path) => builder.unix_socket(path.to_owned()),
        None => builder,
    };
    builder
        .build()
        .map_err(|e| std::io::Error::other(format!("cannot make an HTTP client: {e}")))
}

/// A hex SHA-256 of `text`: what tells one batch of questions, a token or
/// a file from another, without keeping it.
pub fn digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Now, in milliseconds since the Unix epoch.
pub fn now() -> store::Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as store::Millis)
}

/// `millis` as RFC 3339, UTC, to the second.
pub(crate) fn rfc3339(millis: store::Millis) -> String {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
    humantime::format_rfc3339_seconds(at).to_string()
}
