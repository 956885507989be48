//! Where the inbox keeps its questions: the [`Store`] trait, the team
//! capabilities ([`team`]), and the engines, opened by the scheme of the
//! URL that names a store ([`open`]): [`SqliteStore`] (`sqlite:PATH`, one
//! file, one server) and [`PgStore`] (`postgres://…`, shared by the servers
//! of a team's inbox). A new engine is a module implementing the traits and
//! a line in [`ENGINES`]; the behaviour suite (the tests below) runs
//! against each.
//!
//! Every change is one transaction, committed (and synced) before the
//! inbox tells anyone about it: an answer is on disk before it is
//! delivered, so a crash between the two delivers it after the restart.
//! The trait is async: an engine never blocks the runtime's workers (the
//! SQLite engine works on blocking threads, PostgreSQL's client is async).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ask_user_seam::AskRequest;

pub mod postgres;
pub mod sqlite;
pub mod team;
pub(crate) mod token_cache;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;
pub use team::TeamStore;

/// The engines, by the scheme of the URL that names a store (spin's
/// registry of key-value stores is the model).
pub const ENGINES: &[(&str, Open)] = &[
    ("sqlite", sqlite::open),
    ("postgres", postgres::open),
    ("postgresql", postgres::open),
];

/// How an engine opens the store at a URL of its scheme.
pub type Open = fn(&str) -> StoreFuture<'_, Opened>;

/// A store opened from its URL.
pub enum Opened {
    /// One server's: one user's inbox, and its agents' tokens.
    Local(Arc<dyn LocalStore>),
    /// Shared by a team's servers: it has every team capability.
    Team(Arc<dyn TeamStore>),
}

/// Opens the store `url` names (`sqlite:PATH`, `postgres://…`) with the
/// engine of its scheme. The URL may hold a password: no error repeats it.
pub async fn open(url: &str) -> Result<Opened, StoreError> {
    let Some((scheme, _)) = url.split_once(':') else {
        return Err(StoreError::Unavailable(
            "a store is named by a URL: sqlite:PATH, or postgres://USER@HOST/DATABASE".to_owned(),
        ));
    };
    match ENGINES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(scheme))
    {
        Some((_, open)) => open(url).await,
        None => Err(StoreError::Unavailable(format!(
            "no store engine for {:?} URLs: the engines are {}",
            ask_user_seam::text::clean(scheme, false),
            ENGINES
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// What a store's work gives, later.
pub type StoreFuture<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// Work that ends later.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a question stands; on the wire as its name (`"waiting"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Open: no outcome yet.
    Waiting,
    /// Answered by a human (`settled_by` says where).
    Answered,
    /// Dismissed by a human without answering.
    Cancelled,
    /// The agent stopped waiting (its call ended: aborted, timed out).
    Withdrawn,
    /// Its agent was gone for longer than the retention period.
    Expired,
}

impl State {
    /// Its name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Waiting => "waiting",
            State::Answered => "answered",
            State::Cancelled => "cancelled",
            State::Withdrawn => "withdrawn",
            State::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Result<State, StoreError> {
        Ok(match text {
            "waiting" => State::Waiting,
            "answered" => State::Answered,
            "cancelled" => State::Cancelled,
            "withdrawn" => State::Withdrawn,
            "expired" => State::Expired,
            other => {
                return Err(StoreError::Corrupt(format!(
                    "unknown question state {other:?}"
                )));
            }
        })
    }
}

/// What asked a question, and the question.
#[derive(Debug, Clone)]
pub struct NewQuestion {
    /// The root agent's session key.
    pub session: String,
    /// What asked, in the host's words (e.g. `ask-user ask (pid 4242)`).
    pub agent: String,
    /// The agent's working directory, when the host gives one.
    pub cwd: Option<String>,
    pub request: AskRequest,
    /// The identity that asked (a team's agent token's name); `None` in
    /// one user's inbox, where every caller is that user.
    pub owner: Option<String>,
    /// The groups whose people may answer; empty: anyone.
    pub audience: Vec<String>,
}

/// A question as stored.
#[derive(Debug, Clone)]
pub struct Record {
    pub id: String,
    pub session: String,
    pub agent: String,
    pub cwd: Option<String>,
    pub request: AskRequest,
    pub owner: Option<String>,
    pub audience: Vec<String>,
    pub asked_at: Millis,
    /// When its agent was last waiting for it.
    pub agent_seen_at: Millis,
    pub state: State,
    /// The outcome frame's `outcome` (SPEC §5), once settled by a human.
    pub outcome: Option<serde_json::Value>,
    /// Who or what settled it.
    pub settled_by: Option<SettledBy>,
    /// The person who answered or dismissed it, in a team's inbox.
    pub answered_by: Option<String>,
    pub settled_at: Option<Millis>,
    /// When its agent confirmed it got the outcome.
    pub delivered_at: Option<Millis>,
}

impl Record {
    /// The record of `question`, just asked as `id` at `now`.
    pub fn asked(id: String, question: NewQuestion, now: Millis) -> Record {
        Record {
            id,
            session: question.session,
            agent: question.agent,
            cwd: question.cwd,
            request: question.request,
            owner: question.owner,
            audience: question.audience,
            asked_at: now,
            agent_seen_at: now,
            state: State::Waiting,
            outcome: None,
            settled_by: None,
            answered_by: None,
            settled_at: None,
            delivered_at: None,
        }
    }

    /// Who asked, as a person reads it: the agent and the folder it works
    /// in (`Claude Code · ~/src/app`; under this server's home folder as
    /// `~`, which for one user's inbox is the agent's too).
    pub fn asker(&self) -> String {
        match &self.cwd {
            Some(cwd) => format!(
                "{} · {}",
                self.agent,
                ask_user_seam::text::folder(std::path::Path::new(cwd))
            ),
            None => self.agent.clone(),
        }
    }

    /// Whether `person` (of `groups`) may answer it: its audience is
    /// empty or shares a group.
    pub fn answerable_by(&self, groups: &[String]) -> bool {
        answerable(&self.audience, groups)
    }
}

/// Whether someone in `groups` may answer a question for `audience` (none:
/// anyone in the team).
pub fn answerable(audience: &[String], groups: &[String]) -> bool {
    audience.is_empty() || audience.iter().any(|g| groups.contains(g))
}

/// A stored question's columns as either engine reads them, made a
/// [`Record`] here: the JSON in them is read the same way for both.
struct Columns {
    id: String,
    session: String,
    agent: String,
    cwd: Option<String>,
    request: String,
    asked_at: Millis,
    agent_seen_at: Millis,
    state: String,
    outcome: Option<String>,
    settled_by: Option<String>,
    settled_at: Option<Millis>,
    delivered_at: Option<Millis>,
    owner: Option<String>,
    audience: Vec<String>,
    answered_by: Option<String>,
}

impl Columns {
    /// The question, or why this version cannot read it.
    fn record(self) -> Result<Record, Unreadable> {
        let id = self.id.clone();
        let made = (|| -> Result<Record, StoreError> {
            let state = State::parse(&self.state)?;
            Ok(Record {
                request: serde_json::from_str(&self.request)
                    .map_err(|e| StoreError::Corrupt(format!("a stored request: {e}")))?,
                state,
                outcome: self
                    .outcome
                    .map(|text| serde_json::from_str(&text))
                    .transpose()
                    .map_err(|e| StoreError::Corrupt(format!("a stored outcome: {e}")))?,
                id: self.id,
                session: self.session,
                agent: self.agent,
                cwd: self.cwd,
                asked_at: self.asked_at,
                agent_seen_at: self.agent_seen_at,
                settled_by: self.settled_by.map(|text| SettledBy::read(text, state)),
                settled_at: self.settled_at,
                delivered_at: self.delivered_at,
                owner: self.owner,
                audience: self.audience,
                answered_by: self.answered_by,
            })
        })();
        made.map_err(|error| Unreadable {
            id,
            why: error.detail(),
        })
    }
}

/// Who or what settled a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettledBy {
    /// A human, on a page.
    Page,
    /// A human, from the command line (`inbox answer`) or the API.
    Command,
    /// A human, in a two-way channel: its name (`telegram`).
    Channel(String),
    /// Its agent, which stopped waiting, and why ("answered in Claude
    /// Code", "the call was aborted").
    Agent(String),
    /// The retention period: its agent was gone for too long.
    Retention,
}

impl SettledBy {
    /// As stored and shown: `page`, `command`, `retention`, a channel's
    /// name, or the agent's reason.
    pub fn as_str(&self) -> &str {
        match self {
            SettledBy::Page => "page",
            SettledBy::Command => "command",
            SettledBy::Channel(name) => name,
            SettledBy::Agent(reason) => reason,
            SettledBy::Retention => "retention",
        }
    }

    /// Read back as stored for a question that left as `state`: a withdrawn
    /// question's is its agent's reason, whatever it says.
    fn read(text: String, state: State) -> SettledBy {
        match (state, text.as_str()) {
            (State::Withdrawn, _) => SettledBy::Agent(text),
            (_, "page") => SettledBy::Page,
            (_, "retention") => SettledBy::Retention,
            (_, "command") => SettledBy::Command,
            _ => SettledBy::Channel(text),
        }
    }
}

/// A person of a team's inbox: their name and groups.
#[derive(Debug, Clone)]
pub struct Person {
    pub name: String,
    pub groups: Vec<String>,
}

/// How a question leaves the waiting state.
#[derive(Debug, Clone)]
pub struct Settlement {
    pub state: State,
    /// The outcome frame's `outcome`, when a human settled it.
    pub outcome: Option<serde_json::Value>,
    /// Who or what settles it.
    pub by: SettledBy,
    /// The person settling it, checked against its audience in the same
    /// update; `None`: no check (one user's inbox, the agent, retention).
    pub person: Option<Person>,
}

/// What [`Store::settle`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// It was waiting, and this settlement is the one that counts.
    Done,
    /// It had already left (or there is no such question).
    NotWaiting,
    /// It still waits: the person is outside its audience.
    OutsideAudience,
}

/// A question this version cannot read (a newer version's intent kind, a
/// damaged row): listed apart, so that it hides nothing else.
#[derive(Debug, Clone)]
pub struct Unreadable {
    pub id: String,
    /// What could not be read, and why.
    pub why: String,
}

/// What [`Store::list`] found.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub records: Vec<Record>,
    pub unreadable: Vec<Unreadable>,
}

/// A store that failed.
#[derive(Debug, Clone)]
pub enum StoreError {
    /// It cannot be reached or opened: the database is down or refuses
    /// us, a file cannot be made.
    Unavailable(String),
    /// What was asked conflicts with what is stored (a name taken).
    Conflict(String),
    /// What is stored cannot be read by this version: a newer schema, a
    /// damaged row.
    Corrupt(String),
    /// The engine failed doing the work; its error.
    Backend(Arc<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// The engine's error, kept as the source.
    pub fn backend(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
        StoreError::Backend(Arc::new(error))
    }

    /// What went wrong, without saying that it was the store.
    pub fn detail(&self) -> String {
        match self {
            StoreError::Unavailable(why) | StoreError::Conflict(why) | StoreError::Corrupt(why) => {
                why.clone()
            }
            StoreError::Backend(error) => error.to_string(),
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the inbox's store failed: {}", self.detail())
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Backend(error) => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// One server's store: the questions, and the tokens of the agents that
/// reach one user's inbox over loopback (`[inbox] agents`).
pub trait LocalStore: Store + team::Tokens {}

impl<T: Store + team::Tokens> LocalStore for T {}

/// The inbox's questions, durable.
pub trait Store: Send + Sync + 'static {
    /// Stores `question` as waiting, unless the same owner's session asked
    /// the identical batch at or after `since` and that question still
    /// waits or holds an outcome its agent never confirmed: then that one
    /// is returned (re-attached, `true`).
    fn ask(
        &self,
        question: NewQuestion,
        since: Millis,
        now: Millis,
    ) -> StoreFuture<'_, (Record, bool)>;

    /// The question `id`.
    fn get(&self, id: String) -> StoreFuture<'_, Option<Record>>;

    /// Settles `id` when it still waits (and, for a person, when they are
    /// in its audience, checked in the same update): the first settlement
    /// wins.
    fn settle(&self, id: String, settlement: Settlement, now: Millis) -> StoreFuture<'_, Settled>;

    /// Its agent was waiting for `id` at `now`; the question as it is then
    /// (`None`: there is no such question), read in the same step.
    fn seen(&self, id: String, now: Millis) -> StoreFuture<'_, Option<Record>>;

    /// Its agent got the outcome of `id`.
    fn delivered(&self, id: String, now: Millis) -> StoreFuture<'_, ()>;

    /// Expires the questions still waiting whose agent was last seen before
    /// `before`, except those in `attached` (an agent waits for them now);
    /// their ids.
    fn expire(
        &self,
        before: Millis,
        now: Millis,
        attached: Vec<String>,
    ) -> StoreFuture<'_, Vec<String>>;

    /// The waiting questions, oldest first; with `all`, also the `limit`
    /// most recent that left (newest first, after the waiting ones). A row
    /// that cannot be read is listed apart and hides nothing else.
    fn list(&self, all: bool, limit: usize) -> StoreFuture<'_, Listing>;

    /// What the two-way channel `name` kept ([`Store::keep_channel_state`]).
    fn channel_state(&self, name: String) -> StoreFuture<'_, Option<String>>;

    /// Keeps `state` for the two-way channel `name` (what it showed, and
    /// how far it read), replacing what it kept.
    fn keep_channel_state(&self, name: String, state: String) -> StoreFuture<'_, ()>;
}

/// The same batch of questions gives the same fingerprint.
fn fingerprint(request: &AskRequest) -> Result<String, StoreError> {
    let text = serde_json::to_string(request).map_err(StoreError::backend)?;
    Ok(crate::digest(&text))
}

/// A new question's id: random, so never made twice, in this database or
/// another (an agent that comes back after the database was reset finds no
/// one else's question under its id).
fn new_id() -> Result<String, StoreError> {
    ask_user_seam::secret::id("q").map_err(StoreError::backend)
}

#[cfg(test)]
pub(crate) mod tests;
