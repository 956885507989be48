//! `ask-user inbox serve`: the inbox service.
//!
//! One process per user and state directory (a lock file says so). It
//! keeps its questions in a [`Store`] and serves in two places:
//!
//! - one user's: the answer page of every session (`/`, `/events`, `/answer`), on
//!   loopback unless told otherwise, with the token every request needs (the
//!   same checks as the web answerer's page, [`ask_user_answerers::answer_page`]): each
//!   card says which session, agent and folder asked, and when. The token is
//!   new at every start, and reaches a browser through a one-time link
//!   (`ask-user inbox page`, a desktop notification), never through a file;
//! - the API, for this user's agents and commands only, on a Unix socket in
//!   the state directory ([`crate::SOCKET_FILE`], mode 0600, each peer checked
//!   to be this user). A client that reaches it has reached this user's
//!   inbox, and nobody else's: a port another user took over after this
//!   server stopped is never asked anything. No token is needed there.
//! - a team's: the API on its address, to tokens ([`crate::access`]), and
//!   the page beside it, to people signed in ([`crate::sessions`]), each
//!   seeing the questions of their audience; every server's page shows
//!   every server's questions (each hears the others' through the
//!   database's announcements).
//!
//! The API:
//! - `POST /api/questions` `{session, agent, cwd?, request}` → `{id, reattached}`;
//! - `GET /api/questions[?all=true&limit=N]` → `{questions:[…], unreadable?:[…]}`
//!   (`N` at most [`MAX_HISTORY`]);
//! - `GET /api/questions/{id}?wait=S`: the question; with `wait`, once it
//!   has left the waiting state or after S seconds (at most 60), whichever
//!   comes first. While its agent's request is open, its agent counts as
//!   waiting (a person's wait does not); a team's token revoked meanwhile
//!   ends it (401);
//! - `POST /api/questions/{id}/answer` `{answers:[…]}`: answers it (422 with
//!   the reason when they do not fit, 409 when it already left; 404, as for
//!   a question that does not exist, to anyone outside its audience);
//! - `POST /api/questions/{id}/delivered`: its agent got the outcome;
//! - `POST /api/questions/{id}/withdraw` `{reason}`: its agent stopped waiting;
//! - `POST /api/page` → `{url}`: a new one-time link to the page.
//!
//! An outcome is committed to the store before anyone is told, so a crash
//! loses nothing: after a restart the same questions are listed under the
//! same ids, and agents that come back get their outcomes. The store is
//! called on the runtime's blocking threads, never on its workers.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path as FilePath, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use ask_user_seam::remote::{self, Outcome, ResultValue, Unsettled};
use ask_user_seam::{Answer, AskError, ErrorCode};

use crate::access::{self, Caller, Credential};
use crate::notify::{Escalation, Notifications, Notifier};
use crate::sessions::Sessions;
use crate::store::{
    NewQuestion, Opened, Person, Record, Settled, Settlement, SqliteStore, State as QuestionState,
    Store, StoreError, TeamStore,
};
use crate::waiters::{Waiters, Watch};
use crate::{
    AskBody, AskReply, DATABASE_FILE, PageLink, QuestionList, QuestionView, SOCKET_FILE,
    UnreadableView, WithdrawBody,
};
use ask_user_answerers::answer_page::{self, Desk, Gate, Left, cancel, withdrawn};
use ask_user_answerers::serve::{PrivateSocket, Serving, client_host, listen};
use axum::http::request::Parts;

/// The largest ask taken, in bytes: the host's largest request by default
/// ([`crate::RuntimeConfig`]), and what asked (session, agent, folder). A
/// host that allows larger requests has them refused here (413).
pub const MAX_ASK_BYTES: usize = ask_user_seam::limits::DEFAULT_MAX_REQUEST_BYTES + (64 << 10);

/// The largest API request body accepted, in bytes: an ask, or an answer
/// set ([`answer_page::MAX_BODY_BYTES`]).
pub const MAX_BODY_BYTES: usize = if MAX_ASK_BYTES > answer_page::MAX_BODY_BYTES {
    MAX_ASK_BYTES
} else {
    answer_page::MAX_BODY_BYTES
};

/// The longest a `wait` may hold a request open.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// Connections the API serves at once: every waiting agent holds one (its
/// long poll). Past it, connections wait in the kernel's queue; each needs
/// a file descriptor (`ask-user inbox serve` raises its soft limit to the
/// hard one).
pub const MAX_API_CONNECTIONS: usize = 16_384;

/// After its last request ended, an agent counts as waiting this long (it
/// is between two waits).
const AGENT_GAP_MILLIS: i64 = 5_000;

/// How many questions that left `list --all` shows by default.
pub const HISTORY: usize = 100;

/// The most that left one listing asks for (`?limit=`); more is a 400.
pub const MAX_HISTORY: usize = 10_000;

/// How an inbox serves.
#[derive(Debug, Clone)]
pub struct InboxConfig {
    /// Where its database, endpoint file and lock live.
    pub state_dir: PathBuf,
    /// Default: 127.0.0.1 (loopback only).
    pub bind: IpAddr,
    /// The page's port; `None`: any free one.
    pub port: Option<u16>,
    /// How long a question whose agent is gone stays answerable.
    pub retention: Duration,
    pub notify: Notifications,
    /// Where the questions are kept, as a store URL
    /// ([`crate::store::ENGINES`]): a team's PostgreSQL database
    /// (`postgres://…`), which it shares with the team's other servers, or
    /// one user's SQLite file (`sqlite:PATH`). `None`: one user's, in the
    /// state directory.
    pub database: Option<String>,
    /// A team's inbox: where notifications link to (default: its address).
    pub public_url: Option<String>,
    /// A team's inbox: questions still waiting after a while are sent on
    /// these channels too.
    pub escalate: Option<Escalation>,
}

impl InboxConfig {
    /// Loopback, any port, the default retention, no notifications.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        InboxConfig {
            state_dir: state_dir.into(),
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: None,
            retention: crate::DEFAULT_RETENTION,
            notify: Notifications::default(),
            database: None,
            public_url: None,
            escalate: None,
        }
    }
}

/// A running inbox.
pub struct InboxServer {
    inbox: Arc<Inbox>,
    /// One user's: the page, and the API on the private socket (removed
    /// when it stops). A team's: the API on its address.
    serving: Vec<Serving>,
    /// The sweeper, and a team's listener of settlements.
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// One user's, held while serving: one inbox per state directory.
    _lock: Option<std::fs::File>,
}

struct Inbox {
    gate: Gate,
    /// The page's address, without a token.
    address: String,
    store: Arc<dyn Store>,
    /// New questions and `cancel`s, for the pages.
    frames: broadcast::Sender<Value>,
    /// The agents waiting now, by question.
    waiters: Arc<Waiters>,
    notifier: Arc<Notifier>,
    /// One user's, or one of a team's servers.
    mode: Mode,
    retention: Duration,
    closing: CancellationToken,
}

impl InboxServer {
    /// Opens the store and serves: one user's inbox binds the page's port
    /// and the API's socket; a team's ([`InboxConfig::database`]) serves
    /// the API on its address, to tokens.
    pub async fn start(config: InboxConfig) -> std::io::Result<Self> {
        let Some(url) = &config.database else {
            return Self::start_local(config, None).await;
        };
        match crate::store::open(url)
            .await
            .map_err(std::io::Error::other)?
        {
            Opened::Team(store) => Self::start_team(config, store).await,
            Opened::Local(store) => Self::start_local(config, Some(store)).await,
        }
    }

    /// One user's inbox, its questions in `store` (default: the state
    /// directory's database).
    async fn start_local(
        config: InboxConfig,
        store: Option<Arc<dyn Store>>,
    ) -> std::io::Result<Self> {
        if config.escalate.is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "[inbox.escalate] is a team's inbox's (inbox serve --database) for now",
            ));
        }
        // Used as resolved from here on: no link swapped later leads
        // anywhere else.
        let dir = ask_user_seam::files::private_dir(&config.state_dir)?;
        let lock = lock(&dir)?;
        let store: Arc<dyn Store> = match store {
            Some(store) => store,
            None => {
                let path = dir.join(DATABASE_FILE);
                Arc::new(
                    tokio::task::spawn_blocking(move || SqliteStore::open(&path))
                        .await
                        .map_err(std::io::Error::other)?
                        .map_err(std::io::Error::other)?,
                )
            }
        };
        let listener = listen(
            "the inbox",
            std::net::SocketAddr::new(config.bind, config.port.unwrap_or(0)),
        )
        .await?;
        let inbox = Inbox::new(&config, store, Mode::Local, listener.local_addr()?)?;
        let socket = PrivateSocket::bind(&dir.join(SOCKET_FILE))?;
        // Only this user reaches the socket: every caller is the owner.
        let api = api(inbox.clone()).layer(Extension(Caller::Owner));
        let pages = answer_page::routes(inbox.clone());
        Ok(InboxServer {
            serving: vec![
                Serving::start(listener, pages),
                Serving::start_with(socket, api, MAX_API_CONNECTIONS),
            ],
            tasks: vec![
                tokio::spawn(sweep(inbox.clone())),
                tokio::spawn(presence(inbox.clone())),
            ],
            inbox,
            _lock: Some(lock),
        })
    }

    /// One of a team's inbox servers, sharing `store` with the others.
    async fn start_team(config: InboxConfig, store: Arc<dyn TeamStore>) -> std::io::Result<Self> {
        if config.notify.names().contains(&"desktop") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "desktop notifications are one user's: a team's inbox notifies by ntfy or webhook",
            ));
        }
        let listener = listen(
            "the inbox",
            std::net::SocketAddr::new(config.bind, config.port.unwrap_or(0)),
        )
        .await?;
        let sessions = Arc::new(Sessions::new(store.clone(), config.public_url.as_deref()));
        let inbox = Inbox::new(
            &config,
            store.clone(),
            Mode::Team(sessions.clone()),
            listener.local_addr()?,
        )?;
        let tokens: Arc<dyn crate::store::team::Tokens> = store.clone();
        let app = api(inbox.clone())
            .layer(axum::middleware::from_fn_with_state(
                tokens,
                access::authenticate,
            ))
            .merge(answer_page::routes(inbox.clone()))
            .merge(sessions.routes());
        let (feed, announced) = tokio::sync::mpsc::unbounded_channel();
        let listening = {
            let (store, closing, inbox) = (store.clone(), inbox.closing.clone(), inbox.clone());
            async move {
                let announced = Arc::new(move |id: Option<&str>| inbox.announced(id, &feed));
                store.listen(closing, announced).await;
            }
        };
        let pages = tell_pages(inbox.clone(), store.clone(), announced);
        let outbox = crate::outbox::dispatch(store, inbox.notifier.clone(), inbox.closing.clone());
        Ok(InboxServer {
            serving: vec![Serving::start_with(listener, app, MAX_API_CONNECTIONS)],
            tasks: vec![
                tokio::spawn(sweep(inbox.clone())),
                tokio::spawn(presence(inbox.clone())),
                tokio::spawn(listening),
                tokio::spawn(pages),
                tokio::spawn(outbox),
            ],
            inbox,
            _lock: None,
        })
    }

    /// The page's address, without the token.
    pub fn address(&self) -> &str {
        &self.inbox.address
    }

    /// A new one-time link to the page.
    pub fn page_link(&self) -> std::io::Result<String> {
        self.inbox.gate.ticket(&self.inbox.address)
    }

    /// Stops serving: the pages' streams end, waiting agents get a reply
    /// and come back when an inbox serves again, the socket goes. Nothing
    /// stored is lost.
    pub async fn stop(self) {
        self.inbox.closing.cancel();
        for task in &self.tasks {
            task.abort();
        }
        for mut serving in self.serving {
            serving.stop().await;
        }
    }
}

/// The API's routes; each request carries its [`Caller`].
fn api(inbox: Arc<Inbox>) -> Router {
    Router::new()
        .route("/api/questions", post(ask).get(list))
        .route("/api/questions/{id}", get(question))
        .route("/api/questions/{id}/answer", post(answer))
        .route("/api/questions/{id}/delivered", post(delivered))
        .route("/api/questions/{id}/withdraw", post(withdraw))
        .route("/api/page", post(page_link))
        .with_state(inbox)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// Takes the state directory's lock and writes this process's id in it,
/// or says which inbox holds it.
fn lock(dir: &FilePath) -> std::io::Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("inbox.lock");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
        })?;
    // SAFETY: flock on a descriptor we own; no memory is touched.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        let pid = pid.trim();
        let serving = if pid.is_empty() {
            String::new()
        } else {
            format!(" (pid {pid})")
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!(
                "an inbox is already serving from {}{serving}; stop it first, or give \
                 another ASK_USER_STATE_DIR",
                dir.display()
            ),
        ));
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{}", std::process::id())?;
    Ok(file)
}

/// Expires the questions whose agent has been gone past the retention
/// period: every minute (or tenth of the period), once this server has
/// served for a whole period (an inbox that was not running cannot tell an
/// agent that is gone from one that could not reach it). It writes only
/// what expires.
async fn sweep(inbox: Arc<Inbox>) {
    let retention = inbox.retention;
    let every = (retention / 10).clamp(Duration::from_millis(100), Duration::from_secs(60));
    tokio::time::sleep(retention).await;
    loop {
        // An agent in the middle of a wait is here, however short the
        // period: on this server, attached; on another of a team's, seen
        // within the longest wait (each wait writes its start).
        let attached = inbox.waiters.attached();
        let mut gone = retention.as_millis() as i64;
        if let Mode::Team(_) = inbox.mode {
            gone = gone.max(inbox.presence_millis());
        }
        let before = crate::now() - gone;
        match inbox.store.expire(before, crate::now(), attached).await {
            Ok(expired) => {
                for id in expired {
                    inbox.left(&id, departure(&id, QuestionState::Expired, None, None));
                }
            }
            Err(error) => tracing::warn!(%error, "the inbox could not expire old questions"),
        }
        tokio::time::sleep(every).await;
    }
}

/// One user's inbox, or one of a team's servers: what differs.
enum Mode {
    /// One user's: its owner is admitted by the page's gate, and every
    /// change happens in this process.
    Local,
    /// A team's: people sign in ([`Sessions`]); the store is shared with
    /// other servers, and announces every change to each.
    Team(Arc<Sessions>),
}

impl Mode {
    /// Whether this server's pages (and the other servers) hear of a
    /// question asked or settled through the store's announcements, rather
    /// than from this process.
    fn announces(&self) -> bool {
        matches!(self, Mode::Team(_))
    }
}

impl Inbox {
    /// The inbox over `store`, its page (or a team's API) at `bound`.
    fn new(
        config: &InboxConfig,
        store: Arc<dyn Store>,
        mode: Mode,
        bound: std::net::SocketAddr,
    ) -> std::io::Result<Arc<Self>> {
        let address = format!("http://{}:{}", client_host(bound), bound.port());
        // New at every start, and kept nowhere: a browser or a copy that
        // had the last one (and a port someone else took over since) gets
        // nothing from it.
        let token = ask_user_answerers::secret::token()?;
        Ok(Arc::new(Inbox {
            gate: Gate::new(token, bound.port()),
            notifier: Arc::new(Notifier::new(
                config.notify.clone(),
                config.escalate.clone(),
                config.public_url.clone().unwrap_or_else(|| address.clone()),
            )?),
            address,
            store,
            frames: broadcast::channel(answer_page::FRAME_BACKLOG).0,
            waiters: Arc::default(),
            mode,
            retention: config.retention,
            closing: CancellationToken::new(),
        }))
    }

    async fn ask(&self, body: AskBody, owner: Option<String>) -> Result<AskReply, StoreError> {
        let now = crate::now();
        let since = now - self.retention.as_millis() as i64;
        let question = NewQuestion {
            session: body.session,
            agent: body.agent,
            cwd: body.cwd,
            request: body.request,
            owner,
            audience: body.audience,
        };
        let (record, reattached) = self.store.ask(question, since, now).await?;
        // A team's pages hear of it from the database's announcement, and
        // its notifications go once from the database's outbox.
        if !reattached && !self.mode.announces() {
            let _ = self.frames.send(frame(&record, true));
            self.notifier
                .arrived(&record, || self.gate.ticket(&self.address).ok());
        }
        Ok(AskReply {
            id: record.id,
            reattached,
        })
    }

    /// Settles `id` with a human's `outcome` from `by` (and `person`, in a
    /// team): answers are checked against its questions first, and the
    /// outcome is stored before anyone hears of it. A store that fails is
    /// not the human's fault: [`Unsettled::Unrecorded`], and the same answer
    /// may be sent again.
    async fn settle(
        &self,
        id: &str,
        outcome: Outcome,
        by: &str,
        person: Option<Person>,
    ) -> Result<(), Unanswered> {
        let unrecorded = |error: StoreError| {
            tracing::warn!(%error, "the inbox could not settle {id}");
            Unsettled::Unrecorded(error.to_string())
        };
        let record = match self.store.get(id.to_owned()).await {
            // Someone outside its audience learns nothing of it, not even
            // whether it still waits or what its answers must be: refused
            // before anything else is checked.
            Ok(Some(record))
                if person
                    .as_ref()
                    .is_some_and(|person| !record.answerable_by(&person.groups)) =>
            {
                return Err(Unanswered::OutsideAudience);
            }
            Ok(Some(record)) if record.state == QuestionState::Waiting => record,
            Ok(_) => return Err(Unsettled::NotPending.into()),
            Err(error) => return Err(unrecorded(error).into()),
        };
        let state = match &outcome {
            Outcome::Result { value } => {
                ask_user_seam::validate::check_answers(&record.request, &value.answers)
                    .map_err(Unsettled::Misfit)?;
                QuestionState::Answered
            }
            Outcome::Rejected { .. } => QuestionState::Cancelled,
            Outcome::Next => {
                return Err(Unsettled::Misfit(AskError::new(
                    ErrorCode::InvalidAnswer,
                    "an inbox question is answered or dismissed; it cannot be passed on",
                ))
                .into());
            }
        };
        let name = person.as_ref().map(|p| p.name.clone());
        let settlement = Settlement {
            state,
            outcome: Some(serde_json::to_value(&outcome).expect("outcomes are plain JSON")),
            by: by.to_owned(),
            person,
        };
        match self
            .store
            .settle(id.to_owned(), settlement, crate::now())
            .await
        {
            Ok(Settled::Done) => {
                self.left(id, departure(id, state, Some(by), name.as_deref()));
                Ok(())
            }
            Ok(Settled::NotWaiting) => Err(Unsettled::NotPending.into()),
            Ok(Settled::OutsideAudience) => Err(Unanswered::OutsideAudience),
            Err(error) => Err(unrecorded(error).into()),
        }
    }

    /// Question `id` left the waiting state (stored already): its agent's
    /// wait ends, and the pages drop it saying why (`frame`, a `cancel`; a
    /// team's pages hear of it from the database's announcement).
    fn left(&self, id: &str, frame: Value) {
        self.waiters.wake(id);
        if !self.mode.announces() {
            let _ = self.frames.send(frame);
        }
    }

    /// A team's database announced question `id` (asked, or settled by any
    /// server), or, with `None`, that anything may have changed (a token
    /// was revoked, or announcements were lost with a connection): its
    /// waiters read it again (every waiter, with `None`), and open pages
    /// hear of it through `feed` ([`tell_pages`]); with `None`, every page
    /// reconnects, is admitted again, and reads what waits.
    fn announced(&self, id: Option<&str>, feed: &tokio::sync::mpsc::UnboundedSender<String>) {
        match id {
            Some(id) => {
                self.waiters.wake(id);
                if self.frames.receiver_count() > 0 {
                    let _ = feed.send(id.to_owned());
                }
            }
            None => {
                self.waiters.wake_all();
                let _ = self.frames.send(Value::Null);
            }
        }
    }

    /// Whether `record`'s agent waits for it now: it is waiting here, or
    /// was a moment ago (between two waits). A team's agent may wait on
    /// another server: it counts while its last wait may still be open.
    fn agent_waiting(&self, record: &Record) -> bool {
        record.state == QuestionState::Waiting
            && (self.waiters.is_attached(&record.id)
                || crate::now() - record.agent_seen_at < self.presence_millis())
    }

    /// How long after its agent was last seen a question counts as waited
    /// for: between two waits; in a team, also through a whole wait open on
    /// another server (a wait is written when it starts and ends).
    fn presence_millis(&self) -> i64 {
        match self.mode {
            Mode::Team(_) => AGENT_GAP_MILLIS + MAX_WAIT.as_millis() as i64,
            Mode::Local => AGENT_GAP_MILLIS,
        }
    }

    fn view(&self, record: Record) -> QuestionView {
        let agent_waiting = self.agent_waiting(&record);
        let answered_by = record.answered_by;
        QuestionView {
            agent_waiting,
            id: record.id,
            session: record.session,
            agent: record.agent,
            cwd: record.cwd,
            asked_at: crate::rfc3339(record.asked_at),
            state: record.state,
            questions: record.request.questions,
            outcome: record.outcome,
            settled_by: record.settled_by,
            answered_by,
            settled_at: record.settled_at.map(crate::rfc3339),
        }
    }
}

/// Why a settlement did not count.
enum Unanswered {
    Unsettled(Unsettled),
    /// The person is outside the question's audience: they are told no
    /// more than of a question that does not exist.
    OutsideAudience,
}

impl From<Unsettled> for Unanswered {
    fn from(unsettled: Unsettled) -> Self {
        Unanswered::Unsettled(unsettled)
    }
}

/// A question's `waterfall` frame, with what asked it, whether its agent
/// waits for it now, and who may answer it, for the page.
fn frame(record: &Record, agent_waiting: bool) -> Value {
    let mut frame = remote::waterfall(&record.id, Some(&record.session), &record.request);
    frame["context"] = json!({
        "session": record.session,
        "agent": record.agent,
        "cwd": record.cwd,
        "askedAt": crate::rfc3339(record.asked_at),
        "audience": record.audience,
        "agentWaiting": agent_waiting,
    });
    frame
}

/// How often the pages hear whose agents came and went.
const PRESENCE_EVERY: Duration = Duration::from_secs(5);

/// Tells open pages when a question's agent goes (killed, say) or comes
/// back: a `presence` frame `{eventId, agentWaiting}` for each change, every
/// [`PRESENCE_EVERY`] while a page is open.
async fn presence(inbox: Arc<Inbox>) {
    let mut told: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(PRESENCE_EVERY) => {}
            () = inbox.closing.cancelled() => return,
        }
        if inbox.frames.receiver_count() == 0 {
            told.clear();
            continue;
        }
        let records = match inbox.store.list(false, 0).await {
            Ok(listing) => listing.records,
            Err(error) => {
                tracing::warn!(%error, "the inbox could not list its questions for its pages");
                continue;
            }
        };
        let mut now = std::collections::HashMap::with_capacity(records.len());
        for record in records {
            let waiting = inbox.agent_waiting(&record);
            if told.get(&record.id).is_some_and(|&was| was != waiting)
                || (!told.contains_key(&record.id) && !waiting)
            {
                let _ = inbox.frames.send(json!({
                    "type": "presence",
                    "eventId": record.id,
                    "agentWaiting": waiting,
                    "audience": record.audience,
                }));
            }
            now.insert(record.id, waiting);
        }
        told = now;
    }
}

/// The `cancel` frame of question `id`, which left the waiting state as
/// `state`, settled by `by` (a withdrawing agent's reason) and, in a
/// team, by the person `person`: what the pages say of it.
fn departure(id: &str, state: QuestionState, by: Option<&str>, person: Option<&str>) -> Value {
    let mut frame = match state {
        QuestionState::Withdrawn => withdrawn(id, by.unwrap_or_default()),
        QuestionState::Expired => cancel(id, Left::Expired),
        QuestionState::Cancelled => cancel(id, Left::Dismissed),
        QuestionState::Answered | QuestionState::Waiting => cancel(id, Left::Answered),
    };
    if let Some(person) = person {
        frame["by"] = person.into();
    }
    frame
}

/// Tells a team's open pages of the questions announced (their ids from
/// `announced`), read from the database in the order they come, many at a
/// time: a waiting one is shown, one that left is dropped, each only to
/// the pages whose person is in its audience.
async fn tell_pages(
    inbox: Arc<Inbox>,
    store: Arc<dyn TeamStore>,
    mut announced: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    /// The most ids read at once.
    const BATCH: usize = 256;
    let mut ids = Vec::with_capacity(BATCH);
    while announced.recv_many(&mut ids, BATCH).await > 0 {
        match store.records(&ids).await {
            Ok(records) => {
                for record in records {
                    let _ = inbox.frames.send(match record.state {
                        QuestionState::Waiting => frame(&record, inbox.agent_waiting(&record)),
                        state => {
                            let mut frame = departure(
                                &record.id,
                                state,
                                record.settled_by.as_deref(),
                                record.answered_by.as_deref(),
                            );
                            frame["audience"] = record.audience.into();
                            frame
                        }
                    });
                }
            }
            Err(error) => {
                // What they missed, the pages read again.
                tracing::warn!(%error, "the inbox could not read questions for its pages");
                let _ = inbox.frames.send(Value::Null);
            }
        }
        ids.clear();
    }
}

/// Counts an agent as waiting for a question while its request is open
/// (a person's request only watches it).
/// As it leaves, when its agent was last here is written first, and only
/// then does the question stop counting as attached: a sweep in between
/// never expires a question whose agent has just been waiting (it is
/// written once per wait, never on a timer).
struct Attached {
    inbox: Arc<Inbox>,
    id: String,
    /// Its agent's wait (or one user's owner's), not a person's: a person
    /// is woken as an agent is, and counts for nothing.
    present: bool,
}

impl Attached {
    /// Attaches a wait for `id`; what it watches for wake-ups. A team's
    /// servers share presence through the database: the wait's start is
    /// written there too, so that no server expires a question whose agent
    /// waits on another ([`sweep`]).
    async fn new(inbox: &Arc<Inbox>, id: &str, present: bool) -> (Self, Watch) {
        let watch = match present {
            false => inbox.waiters.watch(id),
            true => {
                if let Mode::Team(_) = inbox.mode
                    && let Err(error) = inbox.store.seen(id.to_owned(), crate::now()).await
                {
                    tracing::warn!(%error, "the inbox could not note that an agent waits");
                }
                inbox.waiters.attach(id)
            }
        };
        let attached = Attached {
            inbox: inbox.clone(),
            id: id.to_owned(),
            present,
        };
        (attached, watch)
    }

    async fn leave(inbox: Arc<Inbox>, id: String) {
        if let Err(error) = inbox.store.seen(id.clone(), crate::now()).await {
            tracing::warn!(%error, "the inbox could not note that an agent waited");
        }
        inbox.waiters.detach(&id);
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let (inbox, id) = (self.inbox.clone(), std::mem::take(&mut self.id));
        if !self.present {
            inbox.waiters.unwatch(&id);
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(Attached::leave(inbox, id));
        }
    }
}

impl Desk for Inbox {
    /// The owner on one user's page; a signed-in person on a team's.
    type Viewer = Caller;

    async fn admit(&self, parts: &Parts) -> Result<Caller, Response> {
        match &self.mode {
            Mode::Team(sessions) => sessions.admit(parts).await.map(Caller::Person),
            Mode::Local => self.gate.admit(parts).map(|()| Caller::Owner),
        }
    }

    async fn front(&self, parts: Parts) -> Response {
        match &self.mode {
            Mode::Team(sessions) => sessions.front(&parts).await,
            Mode::Local => self.gate.front(&parts),
        }
    }

    fn signed_in(&self, viewer: &Caller) -> Option<String> {
        viewer.person().map(|person| person.name)
    }

    /// A person sees the questions of their audience ([`frame`] and a
    /// team's departures carry it).
    fn shows(&self, viewer: &Caller, frame: &Value) -> bool {
        let Caller::Person(person) = viewer else {
            return true;
        };
        let audience = frame
            .get("audience")
            .or_else(|| frame.pointer("/context/audience"))
            .and_then(|audience| Vec::<String>::deserialize(audience).ok())
            .unwrap_or_default();
        crate::store::answerable(&audience, &person.groups)
    }

    fn subscribe(&self) -> broadcast::Receiver<Value> {
        self.frames.subscribe()
    }

    async fn pending_frames(&self) -> Vec<Value> {
        match self.store.list(false, 0).await {
            Ok(listing) => {
                report(&listing.unreadable);
                listing
                    .records
                    .iter()
                    .map(|record| frame(record, self.agent_waiting(record)))
                    .collect()
            }
            Err(error) => {
                tracing::warn!(%error, "the inbox could not list its questions for a page");
                Vec::new()
            }
        }
    }

    fn page_opened(self: Arc<Self>) -> Box<dyn Send + Sync> {
        Box::new(())
    }

    fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    async fn settle(
        &self,
        viewer: &Caller,
        event_id: &str,
        outcome: Outcome,
    ) -> Result<(), Unsettled> {
        match Inbox::settle(self, event_id, outcome, "page", viewer.person()).await {
            Ok(()) => Ok(()),
            Err(Unanswered::Unsettled(unsettled)) => Err(unsettled),
            // Their page never showed it to them.
            Err(Unanswered::OutsideAudience) => Err(Unsettled::NotPending),
        }
    }
}

/// Logs the questions that could not be read, each with why.
fn report(unreadable: &[crate::store::Unreadable]) {
    for row in unreadable {
        tracing::warn!(
            id = row.id,
            why = row.why,
            "a question this version cannot read was left out"
        );
    }
}

/// The store failed: 503, which a client tries again; nothing changed.
fn failed(error: StoreError) -> Response {
    tracing::warn!(%error, "an inbox request failed");
    (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response()
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

fn not_found(id: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!("the inbox has no question {id:?}; `ask-user inbox list` shows them"),
    )
        .into_response()
}

async fn ask(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Caller>,
    body: axum::body::Bytes,
) -> Response {
    if let Some(refused) = caller.unless_agent("ask") {
        return refused;
    }
    let body: AskBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => return bad_request(format!("not an ask: {error}")),
    };
    if body.session.is_empty() || body.request.questions.is_empty() {
        return bad_request("an ask needs a session and at least one question".into());
    }
    match inbox.ask(body, caller.owner()).await {
        Ok(reply) => Json(reply).into_response(),
        Err(error) => failed(error),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    #[serde(default)]
    all: bool,
    limit: Option<usize>,
}

async fn list(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<ListQuery>,
) -> Response {
    if let Some(refused) = caller.unless_person("list questions") {
        return refused;
    }
    let limit = query.limit.unwrap_or(HISTORY);
    if limit > MAX_HISTORY {
        return bad_request(format!(
            "a listing holds at most {MAX_HISTORY} questions that left: ask for ?limit={MAX_HISTORY} or fewer"
        ));
    }
    match inbox.store.list(query.all, limit).await {
        Ok(listing) => {
            report(&listing.unreadable);
            Json(QuestionList {
                questions: listing
                    .records
                    .into_iter()
                    .filter(|record| caller.may_see(record))
                    .map(|r| inbox.view(r))
                    .collect(),
                unreadable: listing
                    .unreadable
                    .into_iter()
                    .map(|row| UnreadableView {
                        id: row.id,
                        why: row.why,
                    })
                    .collect(),
            })
            .into_response()
        }
        Err(error) => failed(error),
    }
}

/// The question `id`, when `caller` may see it; else the response (404
/// for one it may not see: it learns nothing of it).
async fn visible(inbox: &Inbox, caller: &Caller, id: &str) -> Result<Record, Response> {
    match inbox.store.get(id.to_owned()).await {
        Ok(Some(record)) if caller.may_see(&record) => Ok(record),
        Ok(_) => Err(not_found(id)),
        Err(error) => Err(failed(error)),
    }
}

#[derive(Deserialize)]
struct WaitQuery {
    /// Seconds.
    wait: Option<f64>,
}

/// How often a wait in a team's inbox reads its question again though
/// nothing announced a change (an announcement lost with its connection,
/// say). One user's inbox hears of every change in this process.
const REREAD: Duration = Duration::from_secs(5);

/// Resolves after [`REREAD`] in a team's inbox; never in one user's.
async fn reread(mode: &Mode) {
    match mode {
        Mode::Team(_) => tokio::time::sleep(REREAD).await,
        Mode::Local => std::future::pending().await,
    }
}

async fn question(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Caller>,
    credential: Option<Extension<Credential>>,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Response {
    let wait = Duration::try_from_secs_f64(query.wait.unwrap_or(0.0))
        .unwrap_or_default()
        .min(MAX_WAIT);
    let deadline = tokio::time::Instant::now() + wait;
    // A team's token revoked while it waits gets nothing more: checked when
    // every waiter is woken (which a revocation does) and before an outcome
    // reached by waiting is given.
    let revoked = async || match &credential {
        Some(Extension(credential)) => credential.revoked().await,
        None => None,
    };
    // Only its agent (or one user's owner) waiting keeps a question from
    // expiring and counts as its agent being here: a person polling it
    // does neither.
    let presence = !matches!(caller, Caller::Person(_));
    // Watching once the question is found waiting (a question the caller
    // may not see is never held from expiry by it); read again right after,
    // so that nothing settled in between is missed.
    let mut watching: Option<(Attached, Watch)> = None;
    loop {
        let record = match visible(&inbox, &caller, &id).await {
            Ok(record) => record,
            Err(response) => return response,
        };
        if record.state != QuestionState::Waiting || wait.is_zero() {
            if watching.is_some()
                && let Some(refused) = revoked().await
            {
                return refused;
            }
            return Json(inbox.view(record)).into_response();
        }
        let Some((_, watch)) = &mut watching else {
            watching = Some(Attached::new(&inbox, &id, presence).await);
            continue;
        };
        tokio::select! {
            _ = watch.mine.changed() => {}
            _ = watch.all.changed() => {
                if let Some(refused) = revoked().await {
                    return refused;
                }
            }
            () = reread(&inbox.mode) => {}
            () = tokio::time::sleep_until(deadline) => return Json(inbox.view(record)).into_response(),
            () = inbox.closing.cancelled() => return Json(inbox.view(record)).into_response(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    answers: Vec<Answer>,
}

async fn answer(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    if let Some(refused) = caller.unless_person("answer") {
        return refused;
    }
    let body: AnswerBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => {
            return bad_request(format!(
                "not answers shaped {{\"answers\":[{{\"id\":…,\"selected\":[…],\"custom\":…}}]}}: {error}"
            ));
        }
    };
    // One outside its audience is told what it would be told of a
    // question that does not exist: nothing of it, not even that it exists.
    if let Err(response) = visible(&inbox, &caller, &id).await {
        return response;
    }
    let outcome = Outcome::Result {
        value: ResultValue {
            answers: body.answers,
        },
    };
    match inbox.settle(&id, outcome, "command", caller.person()).await {
        Ok(()) => answer_page::settled(Ok(())),
        Err(Unanswered::Unsettled(unsettled)) => answer_page::settled(Err(unsettled)),
        Err(Unanswered::OutsideAudience) => not_found(&id),
    }
}

async fn delivered(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    if let Some(refused) = caller.unless_agent("confirm an outcome") {
        return refused;
    }
    if let Err(response) = visible(&inbox, &caller, &id).await {
        return response;
    }
    match inbox.store.delivered(id, crate::now()).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => failed(error),
    }
}

async fn withdraw(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    if let Some(refused) = caller.unless_agent("withdraw a question") {
        return refused;
    }
    let body: WithdrawBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => return bad_request(format!("not {{\"reason\":…}}: {error}")),
    };
    if let Err(response) = visible(&inbox, &caller, &id).await {
        return response;
    }
    let settlement = Settlement {
        state: QuestionState::Withdrawn,
        outcome: None,
        by: body.reason.clone(),
        person: None,
    };
    match inbox
        .store
        .settle(id.clone(), settlement, crate::now())
        .await
    {
        Ok(Settled::Done) => {
            inbox.left(
                &id,
                departure(&id, QuestionState::Withdrawn, Some(&body.reason), None),
            );
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(_) => (StatusCode::CONFLICT, "it was no longer waiting").into_response(),
        Err(error) => failed(error),
    }
}

async fn page_link(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    if !matches!(caller, Caller::Owner) {
        return access::forbidden(
            "a team's inbox has no one-time links: people open its address and sign in with \
             their person token"
                .to_owned(),
        );
    }
    match inbox.gate.ticket(&inbox.address) {
        Ok(url) => Json(PageLink { url }).into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response(),
    }
}
