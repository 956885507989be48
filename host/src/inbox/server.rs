//! `ask-user inbox serve`: the inbox service.
//!
//! One process per user and state directory (a lock file says so). It
//! keeps its questions in a [`Store`] and serves, on loopback unless told
//! otherwise, with the token every request needs (the same checks as the
//! web answerer's page, [`crate::answer_page`]):
//!
//! - the answer page of every session (`/`, `/events`, `/answer`): each
//!   card says which session, agent and folder asked, and when;
//! - `POST /api/questions` `{session, agent, cwd?, request}` → `{id, reattached}`;
//! - `GET /api/questions[?all=true&limit=N]` → `{questions:[…]}`;
//! - `GET /api/questions/{id}?wait=S`: the question; with `wait`, once it
//!   has left the waiting state or after S seconds (at most 60), whichever
//!   comes first. While such a request is open, its agent counts as waiting;
//! - `POST /api/questions/{id}/answer` `{answers:[…]}`: answers it (422 with
//!   the reason when they do not fit, 409 when it already left);
//! - `POST /api/questions/{id}/delivered`: its agent got the outcome;
//! - `POST /api/questions/{id}/withdraw` `{reason}`: its agent stopped waiting.
//!
//! An outcome is committed to the store before anyone is told, so a crash
//! loses nothing: after a restart the same questions are listed under the
//! same ids, and agents that come back get their outcomes. The store is
//! called on the server's tasks (SQLite, a few milliseconds a write): enough
//! for one user's agents, not for a team (README, "An inbox for a team").

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
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

use super::notify::{Notifications, Notifier};
use super::store::{NewQuestion, Record, SqliteStore, State as QuestionState, Store, StoreError};
use super::{AskBody, AskReply, DATABASE_FILE, Endpoint, QuestionList, QuestionView, WithdrawBody};
use crate::answer_page::{self, Authorized, Desk, Gate, cancel};
use crate::serve::{Serving, client_host};

/// The largest request body accepted, in bytes: an ask carries at most the
/// seam's largest request (1 MiB by default).
pub const MAX_BODY_BYTES: usize = 2 << 20;

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
    /// `None`: the port of its last run when that is free, else any.
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
            retention: super::DEFAULT_RETENTION,
            notify: Notifications::default(),
        }
    }
}

/// A running inbox.
pub struct InboxServer {
    inbox: Arc<Inbox>,
    endpoint: Endpoint,
    serving: Serving,
    sweeper: tokio::task::JoinHandle<()>,
    /// Held while serving: one inbox per state directory.
    _lock: std::fs::File,
}

struct Inbox {
    gate: Gate,
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
    /// Opens the store, binds, writes the endpoint file and serves.
    pub async fn start(config: InboxConfig) -> std::io::Result<Self> {
        let dir = &config.state_dir;
        crate::config::private_dir(dir)?;
        let lock = lock(dir)?;
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::open(&dir.join(DATABASE_FILE)).map_err(std::io::Error::other)?);
        // Kept across restarts: open pages and waiting agents keep working.
        let token = store
            .setting("token", &crate::secret::token()?)
            .map_err(std::io::Error::other)?;
        let listener = listen(&config).await?;
        let address = listener.local_addr()?;
        let endpoint = Endpoint {
            url: format!("http://{}:{}", client_host(address), address.port()),
            token: token.clone(),
            pid: std::process::id(),
        };
        let inbox = Arc::new(Inbox {
            gate: Gate::new(token, address.port()),
            store,
            frames: broadcast::channel(crate::answerers::web::FRAME_BACKLOG).0,
            changed: watch::channel(0).0,
            waiting: Mutex::new(HashMap::new()),
            notifier: Notifier::new(config.notify.clone(), endpoint.url.clone(), &endpoint.token)?,
            retention: config.retention,
            closing: CancellationToken::new(),
        });
        let api = Router::new()
            .route("/api/questions", post(ask).get(list))
            .route("/api/questions/{id}", get(question))
            .route("/api/questions/{id}/answer", post(answer))
            .route("/api/questions/{id}/delivered", post(delivered))
            .route("/api/questions/{id}/withdraw", post(withdraw))
            .with_state(inbox.clone());
        let app = answer_page::routes(inbox.clone())
            .merge(api)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
        let serving = Serving::start(listener, app);
        endpoint.write(dir)?;
        let sweeper = tokio::spawn(sweep(inbox.clone()));
        Ok(InboxServer {
            inbox,
            endpoint,
            serving,
            sweeper,
            _lock: lock,
        })
    }

    /// Where it serves, and its token.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stops serving: the pages' streams end, waiting agents get a reply
    /// and come back when an inbox serves again. Nothing stored is lost.
    pub async fn stop(mut self) {
        self.inbox.closing.cancel();
        self.sweeper.abort();
        self.serving.stop().await;
    }
}

/// Takes the state directory's lock, or says which inbox holds it.
fn lock(dir: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join("inbox.lock"))?;
    // SAFETY: flock on a descriptor we own; no memory is touched.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let serving = Endpoint::read(dir)
            .map(|e| format!(" at {} (pid {})", e.url, e.pid))
            .unwrap_or_default();
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!(
                "an inbox is already serving from {}{serving}; stop it first, or give \
                 another ASK_USER_STATE_DIR",
                dir.display()
            ),
        ));
    }
    Ok(file)
}

/// Binds the port asked for; with none, the last run's port when it is
/// free (open pages then reconnect by themselves), else any.
async fn listen(config: &InboxConfig) -> std::io::Result<tokio::net::TcpListener> {
    let bind = |port: u16| tokio::net::TcpListener::bind((config.bind, port));
    let cannot = |port: u16, e: std::io::Error| {
        std::io::Error::new(
            e.kind(),
            format!("the inbox cannot listen on {}:{port}: {e}", config.bind),
        )
    };
    if let Some(port) = config.port {
        return bind(port).await.map_err(|e| cannot(port, e));
    }
    let last = Endpoint::read(&config.state_dir).ok().and_then(|endpoint| {
        let port = endpoint.url.rsplit(':').next()?;
        port.parse::<u16>().ok()
    });
    if let Some(port) = last
        && let Ok(listener) = bind(port).await
    {
        return Ok(listener);
    }
    bind(0).await.map_err(|e| cannot(0, e))
}

/// Expires the questions whose agent has been gone past the retention
/// period: at start, then every minute (or tenth of the period).
async fn sweep(inbox: Arc<Inbox>) {
    let retention = inbox.retention;
    let every = (retention / 10).clamp(Duration::from_millis(100), Duration::from_secs(60));
    loop {
        // An agent in the middle of a wait is here, however short the period.
        let attached: Vec<String> = inbox
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for id in attached {
            if let Err(error) = inbox.store.seen(&id, super::now()) {
                tracing::warn!(%error, "the inbox could not note that an agent waits");
            }
        }
        let before = super::now() - retention.as_millis() as i64;
        match inbox.store.expire(before, super::now()) {
            Ok(expired) => {
                for id in expired {
                    inbox.left(&id, "withdrawn");
                }
            }
            Err(error) => tracing::warn!(%error, "the inbox could not expire old questions"),
        }
        tokio::time::sleep(every).await;
    }
}

impl Inbox {
    fn ask(&self, body: AskBody) -> Result<AskReply, StoreError> {
        let now = super::now();
        let since = now - self.retention.as_millis() as i64;
        let (record, reattached) = self.store.ask(
            NewQuestion {
                session: body.session,
                agent: body.agent,
                cwd: body.cwd,
                request: body.request,
            },
            since,
            now,
        )?;
        if !reattached {
            let _ = self.frames.send(frame(&record));
            self.notifier.arrived(&record);
        }
        Ok(AskReply {
            id: record.id,
            reattached,
        })
    }

    /// Settles `id` with a human's `outcome` from `by`: answers are checked
    /// against its questions first, and the outcome is stored before
    /// anyone hears of it.
    fn settle(&self, id: &str, outcome: Outcome, by: &str) -> Result<(), Unsettled> {
        let stored = |error: StoreError| {
            tracing::warn!(%error, "the inbox could not settle {id}");
            Unsettled::Misfit(AskError::new(
                ErrorCode::InvalidAnswer,
                format!("the inbox could not record it ({error}); try again"),
            ))
        };
        let record = match self.store.get(id) {
            Ok(Some(record)) if record.state == QuestionState::Waiting => record,
            Ok(_) => return Err(Unsettled::NotPending),
            Err(error) => return Err(stored(error)),
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
        let outcome = serde_json::to_value(&outcome).expect("outcomes are plain JSON");
        match self
            .store
            .settle(id, state, Some(&outcome), by, super::now())
        {
            Ok(true) => {
                self.left(id, "answered");
                Ok(())
            }
            Ok(false) => Err(Unsettled::NotPending),
            Err(error) => Err(stored(error)),
        }
    }

    /// Question `id` left the waiting state (stored already): its agent's
    /// wait ends, and the pages drop it saying why.
    fn left(&self, id: &str, reason: &str) {
        self.changed.send_modify(|n| *n += 1);
        let _ = self.frames.send(cancel(id, reason));
    }

    fn view(&self, record: Record) -> QuestionView {
        let attached = self
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&record.id)
            .is_some_and(|&n| n > 0);
        let recent = super::now() - record.agent_seen_at < AGENT_GAP_MILLIS;
        QuestionView {
            agent_waiting: record.state == QuestionState::Waiting && (attached || recent),
            id: record.id,
            session: record.session,
            agent: record.agent,
            cwd: record.cwd,
            asked_at: super::rfc3339(record.asked_at),
            state: record.state.as_str().to_owned(),
            questions: record.request.questions,
            outcome: record.outcome,
            settled_by: record.settled_by,
            settled_at: record.settled_at.map(super::rfc3339),
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
        "askedAt": super::rfc3339(record.asked_at),
    });
    frame
}

/// Counts an agent as waiting for a question while its request is open.
struct Attached<'a> {
    inbox: &'a Inbox,
    id: String,
}

impl<'a> Attached<'a> {
    fn new(inbox: &'a Inbox, id: &str) -> Self {
        *inbox
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(id.to_owned())
            .or_default() += 1;
        Attached {
            inbox,
            id: id.to_owned(),
        }
    }
}

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        let mut waiting = self
            .inbox
            .waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = waiting.get_mut(&self.id) {
            *n -= 1;
            if *n == 0 {
                waiting.remove(&self.id);
            }
        }
        drop(waiting);
        if let Err(error) = self.inbox.store.seen(&self.id, super::now()) {
            tracing::warn!(%error, "the inbox could not note that an agent waited");
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

    fn pending_frames(&self) -> Vec<Value> {
        match self.store.list(false, 0) {
            Ok(records) => records.iter().map(frame).collect(),
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

    fn settle(&self, event_id: &str, outcome: Outcome) -> Result<(), Unsettled> {
        Inbox::settle(self, event_id, outcome, "page")
    }
}

fn failed(error: StoreError) -> Response {
    tracing::warn!(%error, "an inbox request failed");
    (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response()
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

async fn ask(_: Authorized, State(inbox): State<Arc<Inbox>>, body: axum::body::Bytes) -> Response {
    let body: AskBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => return bad_request(format!("not an ask: {error}")),
    };
    if body.session.is_empty() || body.request.questions.is_empty() {
        return bad_request("an ask needs a session and at least one question".into());
    }
    match inbox.ask(body) {
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
    _: Authorized,
    State(inbox): State<Arc<Inbox>>,
    Query(query): Query<ListQuery>,
) -> Response {
    match inbox.store.list(query.all, query.limit.unwrap_or(HISTORY)) {
        Ok(records) => Json(QuestionList {
            questions: records.into_iter().map(|r| inbox.view(r)).collect(),
        })
        .into_response(),
        Err(error) => failed(error),
    }
}

#[derive(Deserialize)]
struct WaitQuery {
    /// Seconds.
    wait: Option<f64>,
}

async fn question(
    _: Authorized,
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
        let record = match inbox.store.get(&id) {
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
    _: Authorized,
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
    match inbox.store.get(&id) {
        Ok(Some(_)) => {}
        Ok(None) => return not_found(&id),
        Err(error) => return failed(error),
    }
    let outcome = Outcome::Result {
        value: ResultValue {
            answers: body.answers,
        },
    };
    answer_page::settled(inbox.settle(&id, outcome, "command"))
}

async fn delivered(
    _: Authorized,
    State(inbox): State<Arc<Inbox>>,
    Path(id): Path<String>,
) -> Response {
    match inbox.store.delivered(&id, super::now()) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => failed(error),
    }
}

async fn withdraw(
    _: Authorized,
    State(inbox): State<Arc<Inbox>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let body: WithdrawBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(error) => return bad_request(format!("not {{\"reason\":…}}: {error}")),
    };
    match inbox.store.settle(
        &id,
        QuestionState::Withdrawn,
        None,
        &body.reason,
        super::now(),
    ) {
        Ok(true) => {
            inbox.left(&id, "withdrawn");
            StatusCode::NO_CONTENT.into_response()
        }
        Ok(false) => (StatusCode::CONFLICT, "it was no longer waiting").into_response(),
        Err(error) => failed(error),
    }
}
