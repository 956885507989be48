//! `ask-user inbox serve`: the inbox service.
//!
//! One process per user and state directory (a lock file says so). It
//! keeps its questions in a [`Store`] and serves in two places:
//!
//! - the answer page of every session (`/`, `/events`, `/answer`), on
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
//!
//! The API:
//! - `POST /api/questions` `{session, agent, cwd?, request}` → `{id, reattached}`;
//! - `GET /api/questions[?all=true&limit=N]` → `{questions:[…], unreadable?:[…]}`;
//! - `GET /api/questions/{id}?wait=S`: the question; with `wait`, once it
//!   has left the waiting state or after S seconds (at most 60), whichever
//!   comes first. While such a request is open, its agent counts as waiting;
//! - `POST /api/questions/{id}/answer` `{answers:[…]}`: answers it (422 with
//!   the reason when they do not fit, 409 when it already left);
//! - `POST /api/questions/{id}/delivered`: its agent got the outcome;
//! - `POST /api/questions/{id}/withdraw` `{reason}`: its agent stopped waiting;
//! - `POST /api/page` → `{url}`: a new one-time link to the page.
//!
//! An outcome is committed to the store before anyone is told, so a crash
//! loses nothing: after a restart the same questions are listed under the
//! same ids, and agents that come back get their outcomes. The store is
//! called on the runtime's blocking threads, never on its workers.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path as FilePath, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use ask_user_seam::remote::{self, Outcome, ResultValue, Unsettled};
use ask_user_seam::{Answer, AskError, ErrorCode};

use crate::notify::{Notifications, Notifier};
use crate::store::{NewQuestion, Record, SqliteStore, State as QuestionState, Store, StoreError};
use crate::{
    AskBody, AskReply, DATABASE_FILE, PageLink, QuestionList, QuestionView, SOCKET_FILE,
    UnreadableView, WithdrawBody,
};
use ask_user_answerers::answer_page::{self, Desk, Gate, Left, cancel, withdrawn};
use ask_user_answerers::serve::{PrivateSocket, Serving, client_host, listen};

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

/// After its last request ended, an agent counts as waiting this long (it
/// is between two waits).
const AGENT_GAP_MILLIS: i64 = 5_000;

/// How many questions that left `list --all` shows by default.
pub const HISTORY: usize = 100;

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
        }
    }
}

/// A running inbox.
pub struct InboxServer {
    inbox: Arc<Inbox>,
    /// The page.
    pages: Serving,
    /// The API, on the private socket (removed when it stops).
    api: Serving,
    sweeper: tokio::task::JoinHandle<()>,
    /// Held while serving: one inbox per state directory.
    _lock: std::fs::File,
}

struct Inbox {
    gate: Gate,
    /// The page's address, without a token.
    address: String,
    store: Arc<dyn Store>,
    /// New questions and `cancel`s, for the pages.
    frames: broadcast::Sender<Value>,
    /// Moves on with every settlement, for the waiting agents.
    changed: watch::Sender<u64>,
    /// Requests waiting now, per question.
    waiting: Mutex<HashMap<String, usize>>,
    notifier: Notifier,
    retention: Duration,
    closing: CancellationToken,
}

impl InboxServer {
    /// Opens the store, binds the page's port and the API's socket, and
    /// serves.
    pub async fn start(config: InboxConfig) -> std::io::Result<Self> {
        let dir = config.state_dir.clone();
        ask_user_seam::files::private_dir(&dir)?;
        let lock = lock(&dir)?;
        let path = dir.join(DATABASE_FILE);
        let store: Arc<dyn Store> = Arc::new(
            tokio::task::spawn_blocking(move || SqliteStore::open(&path))
                .await
                .map_err(std::io::Error::other)?
                .map_err(std::io::Error::other)?,
        );
        let listener = listen(
            "the inbox",
            std::net::SocketAddr::new(config.bind, config.port.unwrap_or(0)),
        )
        .await?;
        let bound = listener.local_addr()?;
        let address = format!("http://{}:{}", client_host(bound), bound.port());
        // New at every start, and kept nowhere: a browser or a copy that
        // had the last one (and a port someone else took over since) gets
        // nothing from it.
        let token = ask_user_answerers::secret::token()?;
        let inbox = Arc::new(Inbox {
            gate: Gate::new(token, bound.port()),
            address: address.clone(),
            store,
            frames: broadcast::channel(answer_page::FRAME_BACKLOG).0,
            changed: watch::channel(0).0,
            waiting: Mutex::new(HashMap::new()),
            notifier: Notifier::new(config.notify.clone(), address)?,
            retention: config.retention,
            closing: CancellationToken::new(),
        });
        let socket = PrivateSocket::bind(&dir.join(SOCKET_FILE))?;
        let api = Router::new()
            .route("/api/questions", post(ask).get(list))
            .route("/api/questions/{id}", get(question))
            .route("/api/questions/{id}/answer", post(answer))
            .route("/api/questions/{id}/delivered", post(delivered))
            .route("/api/questions/{id}/withdraw", post(withdraw))
            .route("/api/page", post(page_link))
            .with_state(inbox.clone())
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
        let pages = answer_page::routes(inbox.clone());
        let sweeper = tokio::spawn(sweep(inbox.clone()));
        Ok(InboxServer {
            inbox,
            pages: Serving::start(listener, pages),
            api: Serving::start(socket, api),
            sweeper,
            _lock: lock,
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
    pub async fn stop(mut self) {
        self.inbox.closing.cancel();
        self.sweeper.abort();
        self.api.stop().await;
        self.pages.stop().await;
    }
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
        // An agent in the middle of a wait is here, however short the period.
        let attached: Vec<String> = inbox
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        let before = crate::now() - retention.as_millis() as i64;
        match inbox
            .stored(move |store| store.expire(before, crate::now(), &attached))
            .await
        {
            Ok(expired) => {
                for id in expired {
                    inbox.left(cancel(&id, Left::Expired));
                }
            }
            Err(error) => tracing::warn!(%error, "the inbox could not expire old questions"),
        }
        tokio::time::sleep(every).await;
    }
}

impl Inbox {
    /// Runs `work` on the store on a blocking thread: a write waits for
    /// the disk, and no runtime worker waits with it.
    async fn stored<T: Send + 'static>(
        &self,
        work: impl FnOnce(&dyn Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || work(&*store))
            .await
            .map_err(|e| StoreError(format!("the store's work failed: {e}")))?
    }

    async fn ask(&self, body: AskBody) -> Result<AskReply, StoreError> {
        let now = crate::now();
        let since = now - self.retention.as_millis() as i64;
        let question = NewQuestion {
            session: body.session,
            agent: body.agent,
            cwd: body.cwd,
            request: body.request,
        };
        let (record, reattached) = self
            .stored(move |store| store.ask(question, since, now))
            .await?;
        if !reattached {
            let _ = self.frames.send(frame(&record));
            self.notifier
                .arrived(&record, || self.gate.ticket(&self.address).ok());
        }
        Ok(AskReply {
            id: record.id,
            reattached,
        })
    }

    /// Settles `id` with a human's `outcome` from `by`: answers are checked
    /// against its questions first, and the outcome is stored before
    /// anyone hears of it. A store that fails is not the human's fault:
    /// [`Unsettled::Unrecorded`], and the same answer may be sent again.
    async fn settle(&self, id: &str, outcome: Outcome, by: &str) -> Result<(), Unsettled> {
        let unrecorded = |error: StoreError| {
            tracing::warn!(%error, "the inbox could not settle {id}");
            Unsettled::Unrecorded(error.to_string())
        };
        let owned = id.to_owned();
        let record = match self.stored(move |store| store.get(&owned)).await {
            Ok(Some(record)) if record.state == QuestionState::Waiting => record,
            Ok(_) => return Err(Unsettled::NotPending),
            Err(error) => return Err(unrecorded(error)),
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
                )));
            }
        };
        let left = Left::settled_by(&outcome);
        let outcome = serde_json::to_value(&outcome).expect("outcomes are plain JSON");
        let (owned, by) = (id.to_owned(), by.to_owned());
        match self
            .stored(move |store| store.settle(&owned, state, Some(&outcome), &by, crate::now()))
            .await
        {
            Ok(true) => {
                self.left(cancel(id, left));
                Ok(())
            }
            Ok(false) => Err(Unsettled::NotPending),
            Err(error) => Err(unrecorded(error)),
        }
    }

    /// A question left the waiting state (stored already): its agent's
    /// wait ends, and the pages drop it saying why (`frame`, a `cancel`).
    fn left(&self, frame: Value) {
        self.changed.send_modify(|n| *n += 1);
        let _ = self.frames.send(frame);
    }

    fn view(&self, record: Record) -> QuestionView {
        let attached = self
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&record.id)
            .is_some_and(|&n| n > 0);
        let recent = crate::now() - record.agent_seen_at < AGENT_GAP_MILLIS;
        QuestionView {
            agent_waiting: record.state == QuestionState::Waiting && (attached || recent),
            id: record.id,
            session: record.session,
            agent: record.agent,
            cwd: record.cwd,
            asked_at: crate::rfc3339(record.asked_at),
            state: record.state,
            questions: record.request.questions,
            outcome: record.outcome,
            settled_by: record.settled_by,
            settled_at: record.settled_at.map(crate::rfc3339),
        }
    }
}

/// A question's `waterfall` frame, with what asked it for the page.
fn frame(record: &Record) -> Value {
    let mut frame = remote::waterfall(&record.id, Some(&record.session), &record.request);
    frame["context"] = json!({
        "session": record.session,
        "agent": record.agent,
        "cwd": record.cwd,
        "askedAt": crate::rfc3339(record.asked_at),
    });
    frame
}

/// Counts an agent as waiting for a question while its request is open.
/// As it leaves, when its agent was last here is written first, and only
/// then does the question stop counting as attached: a sweep in between
/// never expires a question whose agent has just been waiting (it is
/// written once per wait, never on a timer).
struct Attached {
    inbox: Arc<Inbox>,
    id: String,
}

impl Attached {
    fn new(inbox: &Arc<Inbox>, id: &str) -> Self {
        *inbox
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(id.to_owned())
            .or_default() += 1;
        Attached {
            inbox: inbox.clone(),
            id: id.to_owned(),
        }
    }

    fn leave(inbox: &Inbox, id: &str) {
        if let Err(error) = inbox.store.seen(id, crate::now()) {
            tracing::warn!(%error, "the inbox could not note that an agent waited");
        }
        let mut waiting = inbox
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = waiting.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                waiting.remove(id);
            }
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let (inbox, id) = (self.inbox.clone(), std::mem::take(&mut self.id));
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || Attached::leave(&inbox, &id))),
            Err(_) => Attached::leave(&inbox, &id),
        }
    }
}

impl Desk for Inbox {
    fn gate(&self) -> &Gate {
        &self.gate
    }

    fn subscribe(&self) -> broadcast::Receiver<Value> {
        self.frames.subscribe()
    }

    async fn pending_frames(&self) -> Vec<Value> {
        match self.stored(|store| store.list(false, 0)).await {
            Ok(listing) => {
                report(&listing.unreadable);
                listing.records.iter().map(frame).collect()
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

    async fn settle(&self, event_id: &str, outcome: Outcome) -> Result<(), Unsettled> {
        Inbox::settle(self, event_id, outcome, "page").await
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

async fn ask(State(inbox): State<Arc<Inbox>>, body: axum::body::Bytes) -> Response {
    let body: AskBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => return bad_request(format!("not an ask: {error}")),
    };
    if body.session.is_empty() || body.request.questions.is_empty() {
        return bad_request("an ask needs a session and at least one question".into());
    }
    match inbox.ask(body).await {
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

async fn list(State(inbox): State<Arc<Inbox>>, Query(query): Query<ListQuery>) -> Response {
    let limit = query.limit.unwrap_or(HISTORY);
    match inbox
        .stored(move |store| store.list(query.all, limit))
        .await
    {
        Ok(listing) => {
            report(&listing.unreadable);
            Json(QuestionList {
                questions: listing.records.into_iter().map(|r| inbox.view(r)).collect(),
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

#[derive(Deserialize)]
struct WaitQuery {
    /// Seconds.
    wait: Option<f64>,
}

async fn question(
    State(inbox): State<Arc<Inbox>>,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Response {
    let wait = Duration::try_from_secs_f64(query.wait.unwrap_or(0.0))
        .unwrap_or_default()
        .min(MAX_WAIT);
    let deadline = tokio::time::Instant::now() + wait;
    let _attached = (!wait.is_zero()).then(|| Attached::new(&inbox, &id));
    loop {
        // Subscribed before reading: a settlement in between is not missed.
        let mut changed = inbox.changed.subscribe();
        let owned = id.clone();
        let record = match inbox.stored(move |store| store.get(&owned)).await {
            Ok(Some(record)) => record,
            Ok(None) => return not_found(&id),
            Err(error) => return failed(error),
        };
        if record.state != QuestionState::Waiting || wait.is_zero() {
            return Json(inbox.view(record)).into_response();
        }
        tokio::select! {
            _ = changed.changed() => {}
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
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let body: AnswerBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => {
            return bad_request(format!(
                "not answers shaped {{\"answers\":[{{\"id\":…,\"selected\":[…],\"custom\":…}}]}}: {error}"
            ));
        }
    };
    let owned = id.clone();
    match inbox.stored(move |store| store.get(&owned)).await {
        Ok(Some(_)) => {}
        Ok(None) => return not_found(&id),
        Err(error) => return failed(error),
    }
    let outcome = Outcome::Result {
        value: ResultValue {
            answers: body.answers,
        },
    };
    answer_page::settled(inbox.settle(&id, outcome, "command").await)
}

async fn delivered(State(inbox): State<Arc<Inbox>>, Path(id): Path<String>) -> Response {
    match inbox
        .stored(move |store| store.delivered(&id, crate::now()))
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => failed(error),
    }
}

async fn withdraw(
    State(inbox): State<Arc<Inbox>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let body: WithdrawBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => return bad_request(format!("not {{\"reason\":…}}: {error}")),
    };
    let (owned, reason) = (id.clone(), body.reason);
    let stored = reason.clone();
    match inbox
        .stored(move |store| {
            store.settle(
                &owned,
                QuestionState::Withdrawn,
                None,
                &stored,
                crate::now(),
            )
        })
        .await
    {
        Ok(true) => {
            inbox.left(withdrawn(&id, &reason));
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(false) => (StatusCode::CONFLICT, "it was no longer waiting").into_response(),
        Err(error) => failed(error),
    }
}

async fn page_link(State(inbox): State<Arc<Inbox>>) -> Response {
    match inbox.gate.ticket(&inbox.address) {
        Ok(url) => Json(PageLink { url }).into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response(),
    }
}
