//! What a team's inbox needs of its store beyond the questions
//! ([`super::Store`]): identities ([`Tokens`]), people's page sessions
//! ([`SignIns`]), notifications sent once by whichever server claims them
//! ([`Outbox`]), and announcements every server hears ([`Announcements`]).
//! An engine that implements them all is a [`TeamStore`]: many servers can
//! share it.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{BoxFuture, Millis, Record, Store, StoreError, StoreFuture};

/// How long a server's claim on a notification holds; past it, another
/// server sends it (the claimer died).
pub const CLAIM_LEASE: Millis = 60_000;

/// How long a person's page session lasts from its sign-in (unless its
/// token is revoked, or they sign out, first).
pub const SESSION_LIFETIME: Millis = 7 * 24 * 60 * 60 * 1000;

/// The prefix of every token, so that secret scanners recognise one.
pub const TOKEN_PREFIX: &str = "askusr_";

/// A store many servers share: the questions and every team capability.
pub trait TeamStore: Store + Tokens + SignIns + Outbox + Announcements + Leases {}

impl<T: Store + Tokens + SignIns + Outbox + Announcements + Leases> TeamStore for T {}

/// A team's identities: tokens, stored as their digest only.
pub trait Tokens: Send + Sync {
    /// Makes a token for `name`; the token, which nobody can be shown
    /// again. A name is never used twice, revoked ones included.
    fn create_token<'a>(
        &'a self,
        name: &'a str,
        role: Role,
        groups: &'a [String],
        now: Millis,
    ) -> StoreFuture<'a, String>;

    /// Every token, oldest first.
    fn tokens(&self) -> StoreFuture<'_, Vec<TokenRow>>;

    /// Revokes the token `name`, and announces it on every server (an
    /// empty announcement: anything may have changed); false when there is
    /// none not revoked.
    fn revoke<'a>(&'a self, name: &'a str, now: Millis) -> StoreFuture<'a, bool>;

    /// Who `token` is, unless it is unknown or revoked.
    fn identify<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Identity>>;
}

/// People's page sessions: a random id, stored as its digest with the
/// token it was opened with, ending with the token's revocation.
pub trait SignIns: Send + Sync {
    /// Opens a page session for the person whose token is `token`: the
    /// session's id and who they are. `None` for a token unknown, revoked,
    /// or an agent's. Sessions past their end are cleared first.
    fn sign_in<'a>(
        &'a self,
        token: &'a str,
        now: Millis,
    ) -> StoreFuture<'a, Option<(String, Identity)>>;

    /// Who holds page session `session`, unless it ended, was signed out
    /// of, or its token was revoked.
    fn session<'a>(&'a self, session: &'a str, now: Millis) -> StoreFuture<'a, Option<Identity>>;

    /// Ends page session `session`.
    fn sign_out<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;
}

/// Notifications as rows that servers claim: each is sent by one server,
/// again only when its claimer died before sending (after
/// [`CLAIM_LEASE`]). Every ask puts its [`Notice::Asked`] in the outbox in
/// the transaction that stores it.
pub trait Outbox: Send + Sync {
    /// Puts the questions asked at or before `cutoff` and still waiting in
    /// the outbox for escalation (once each, whichever server does it).
    fn escalate(&self, cutoff: Millis, now: Millis) -> StoreFuture<'_, ()>;

    /// Claims for server `me` at most `limit` notifications due at `now`
    /// that nobody sent or holds a live claim on (a question's first one
    /// only once it was asked at or before `asked_before`: `[inbox]
    /// notify_after`); their questions.
    fn claim_notices<'a>(
        &'a self,
        me: &'a str,
        now: Millis,
        asked_before: Millis,
        limit: i64,
    ) -> StoreFuture<'a, Vec<(Record, Notice)>>;

    /// Server `me` sent (or had no need to send) notice `notice` of `id`.
    fn notice_sent<'a>(
        &'a self,
        me: &'a str,
        id: &'a str,
        notice: Notice,
        now: Millis,
    ) -> StoreFuture<'a, ()>;
}

/// Every question asked or settled, and every token revoked, announced to
/// every server (a question's id only: the store stays the truth).
pub trait Announcements: Send + Sync {
    /// Listens until `closing`, telling `announced` what it [`Heard`]: each
    /// question announced, each token revoked, and when it stops and starts
    /// listening (it starts not listening).
    fn listen<'a>(&'a self, closing: CancellationToken, announced: Announced) -> BoxFuture<'a, ()>;

    /// The questions `ids` that exist and can be read, in the order asked.
    fn records<'a>(&'a self, ids: &'a [String]) -> StoreFuture<'a, Vec<Record>>;
}

/// Work that one server at a time does (a two-way channel: a Telegram
/// bot's updates must be taken by one consumer).
pub trait Leases: Send + Sync {
    /// Waits until this server holds `name`, trying again every
    /// [`LEASE_RETRY`] while another server does, and then [`LEASE_GRACE`]
    /// more, for a server that held it to have stopped; then gives a future
    /// that ends when the hold is lost (its connection gone or silent past
    /// [`LEASE_CHECK`]). Dropping that future lets the hold go.
    fn hold<'a>(&'a self, name: &'a str) -> StoreFuture<'a, BoxFuture<'static, ()>>;
}

/// How often a server that does not hold a lease tries to take it.
pub const LEASE_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// How often a hold is checked, and how long the check may take.
pub const LEASE_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a server that took a lease waits before it acts on it: longer
/// than a server that lost it takes to notice (a check every
/// [`LEASE_CHECK`], each allowed as long), so two servers never run one
/// channel at once, even when the holder's connection was killed.
pub const LEASE_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// What a server heard of the others, through its store's announcements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard<'a> {
    /// Question `id` was asked or settled.
    Question(&'a str),
    /// A token was revoked.
    Revoked,
    /// The listening connection is gone: until [`Heard::Listening`], what
    /// is announced goes unheard.
    Lost,
    /// Listening (again): what was announced while not listening is
    /// unknown, so anything may have changed.
    Listening,
}

/// What hears each announcement.
pub type Announced = Arc<dyn Fn(Heard<'_>) + Send + Sync>;

/// The stages of a question's notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// It was asked.
    Asked,
    /// It still waits past the escalation time.
    Escalated,
}

/// Who a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Asks, waits for, and withdraws its own questions.
    Agent,
    /// Lists and answers the questions of their audience.
    Person,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Person => "person",
        }
    }

    /// The role named `text`, as stored.
    pub fn parse(text: &str) -> Result<Role, StoreError> {
        match text {
            "agent" => Ok(Role::Agent),
            "person" => Ok(Role::Person),
            other => Err(StoreError::Corrupt(format!("unknown token role {other:?}"))),
        }
    }
}

/// A token's identity, as a request presents it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    pub role: Role,
    pub groups: Vec<String>,
}

/// A token as listed (never the token itself).
#[derive(Debug, Clone)]
pub struct TokenRow {
    pub identity: Identity,
    pub created_at: Millis,
    pub revoked_at: Option<Millis>,
}
