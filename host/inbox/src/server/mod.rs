//! `ask-user inbox serve`: the inbox service.
//!
//! One process per user and state directory (a lock file says so). It
//! keeps its questions in a [`Store`] and serves in two places:
//!
//! - one user's: the answer page of every session (`/`, `/events`, `/answer`), on
//!   loopback unless told otherwise, with the token every request needs (the
//!   same checks as the web answerer's page, [`ask_user_web::answer_page`]): each
//!   card says which session, agent and folder asked, and when. The token
//!   (the page's key, kept in [`crate::PAGE_KEY_FILE`] so that a restart
//!   signs no browser out) reaches a browser through a one-time link
//!   (`ask-user inbox page`, a desktop notification), as its cookie;
//! - the API, for this user's agents and commands only, on a Unix socket in
//!   the state directory ([`crate::SOCKET_FILE`], mode 0600, each peer checked
//!   to be this user). A client that reaches it has reached this user's
//!   inbox, and nobody else's: a port another user took over after this
//!   server stopped is never asked anything. No token is needed there.
//! - a team's: the API on its address, to tokens (the `access` module), and
//!   the page beside it, to people signed in (the `sessions` module), each
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
//! async and never blocks the runtime's workers (SQLite works on blocking
//! threads, PostgreSQL's client is async).

mod api;
mod channels;
mod mode;
mod pages;
mod rejection;
mod start;
mod sweep;

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use ask_user_seam::remote::{Outcome, Unsettled};
use ask_user_seam::{AskError, ErrorCode};

use crate::notify::{ChannelHost, Escalation, Event, Notifications, Notifier};
use crate::store::team::Heard;
use crate::store::{
    NewQuestion, Person, Record, Settled, SettledBy, Settlement, State as QuestionState, Store,
    StoreError,
};
use crate::waiters::Waiters;
use crate::{AskBody, AskReply, QuestionView};
use ask_user_web::answer_page::{self, Gate, PageFrame, Shown};
use ask_user_web::serve::client_host;

pub use start::InboxServer;

use mode::Mode;
use pages::departure;

/// The largest ask taken, in bytes: the host's largest request by default
/// (the runtime's `RuntimeConfig`), and what asked (session, agent, folder). A
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
    /// How long a question waits before any channel tells of it (notices
    /// and two-way channels alike): one answered by then, at the terminal
    /// or on the page, never reaches a phone. Zero: at once.
    pub notify_after: Duration,
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
    /// One user's inbox: where agents with a token of its own (`inbox
    /// token create NAME --role agent`) reach its API over TCP, for those
    /// with no way to its socket (the tool composed with the inbox plug,
    /// in a sandbox); loopback only. `None`: the socket alone.
    pub agents: Option<std::net::SocketAddr>,
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
            notify_after: Duration::ZERO,
            database: None,
            public_url: None,
            escalate: None,
            agents: None,
        }
    }
}

struct Inbox {
    gate: Gate,
    /// The page's address, without a token.
    address: String,
    store: Arc<dyn Store>,
    /// New questions and `cancel`s, for the pages.
    frames: broadcast::Sender<PageFrame>,
    /// The agents waiting now, by question.
    waiters: Arc<Waiters>,
    notifier: Arc<Notifier>,
    /// One user's, or one of a team's servers.
    mode: Box<dyn Mode>,
    retention: Duration,
    closing: CancellationToken,
    /// The questions whose agent's wait here ended without a reply (its
    /// connection closed: the agent was killed, or its host went away),
    /// until its agent waits again: gone now, not between two waits.
    vanished: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Tells the pages of a change of presence now, not at the next tick.
    presence_now: tokio::sync::Notify,
    /// What happened to the questions, for the two-way channels.
    events: broadcast::Sender<Event>,
}

/// How many events a two-way channel may fall behind before it reads
/// every question again.
const EVENT_BACKLOG: usize = 1024;

impl Inbox {
    /// The inbox over `store`, its page (or a team's API) at `bound`.
    fn new(
        config: &InboxConfig,
        store: Arc<dyn Store>,
        mode: Box<dyn Mode>,
        bound: std::net::SocketAddr,
        page_key: String,
    ) -> std::io::Result<Arc<Self>> {
        let address = format!("http://{}:{}", client_host(bound), bound.port());
        Ok(Arc::new(Inbox {
            gate: Gate::new(page_key, bound.port()).opened_by(
                "On the machine the inbox runs on, run `ask-user inbox page`: it prints a \
                 link that opens this page (each link works once).",
            ),
            notifier: Arc::new(Notifier::new(
                config.notify.clone(),
                config.escalate.clone(),
                config.notify_after,
                config.public_url.clone().unwrap_or_else(|| address.clone()),
            )?),
            address,
            store,
            frames: broadcast::channel(answer_page::FRAME_BACKLOG).0,
            waiters: Arc::default(),
            mode,
            retention: config.retention,
            closing: CancellationToken::new(),
            vanished: Default::default(),
            presence_now: tokio::sync::Notify::new(),
            events: broadcast::channel(EVENT_BACKLOG).0,
        }))
    }

    async fn ask(
        self: &Arc<Self>,
        body: AskBody,
        owner: Option<String>,
    ) -> Result<AskReply, StoreError> {
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
        if reattached {
            tracing::info!(
                id = record.id,
                "the same questions asked again in their session: the question is re-attached, \
                 not asked twice"
            );
        }
        // A team's pages hear of it from the database's announcement, and
        // its notifications go once from the database's outbox.
        if !reattached && !self.mode.announces() {
            let _ = self.frames.send(PageFrame::Show(self.frame(&record, true)));
            let _ = self.events.send(Event::Question(record.id.clone()));
            self.notify(record.clone());
        }
        Ok(AskReply {
            id: record.id,
            reattached,
        })
    }

    /// Tells the notifying channels of a question just asked: at once, or
    /// once it has waited `[inbox] notify_after`, if it waits still (one
    /// answered by then is told nowhere; a restart in between forgets it).
    fn notify(self: &Arc<Self>, record: Record) {
        self.remind(&record);
        let after = self.notifier.after();
        if after.is_zero() {
            let link = || self.gate.ticket(&self.address).ok();
            return self.notifier.arrived(&record, link);
        }
        let inbox = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(after) => {}
                () = inbox.closing.cancelled() => return,
            }
            match inbox.store.get(record.id.clone()).await {
                Ok(Some(now)) if now.state == QuestionState::Waiting => {
                    let link = || inbox.gate.ticket(&inbox.address).ok();
                    inbox.notifier.arrived(&now, link);
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, id = record.id, "a question's notice could not be sent")
                }
            }
        });
    }

    /// Reminds of `record` on the escalation's channels (`[inbox.escalate]`)
    /// once it has waited `after` from when it was asked, if it waits
    /// still: one user's inbox (a team's goes through its outbox). A
    /// question whose time passed while the inbox was down is not reminded
    /// of (it may have been): a reminder goes at most once.
    pub(crate) fn remind(self: &Arc<Self>, record: &Record) {
        let Some(due) = self.remind_at(record) else {
            return;
        };
        let Ok(wait) = u64::try_from(due - crate::now()) else {
            return;
        };
        let (inbox, id) = (self.clone(), record.id.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait)) => {}
                () = inbox.closing.cancelled() => return,
            }
            match inbox.store.get(id.clone()).await {
                Ok(Some(now)) if now.state == QuestionState::Waiting => {
                    let link = || inbox.gate.ticket(&inbox.address).ok();
                    inbox.notifier.deliver(&now, true, link).await;
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, id, "a question's reminder could not be sent"),
            }
        });
    }

    /// When `[inbox.escalate]` reminds of `record`, if it does.
    fn remind_at(&self, record: &Record) -> Option<crate::store::Millis> {
        let after = self.notifier.escalates_after()?;
        Some(record.asked_at.saturating_add(after.as_millis() as i64))
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
        by: SettledBy,
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
                ask_user_seam::validate::check_given_answers(&record.request, &value.answers)
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
            by: by.clone(),
            person,
        };
        match self
            .store
            .settle(id.to_owned(), settlement, crate::now())
            .await
        {
            Ok(Settled::Done) => {
                self.left(id, departure(id, state, Some(&by), name.as_deref()));
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
        self.agent_back(id);
        self.update_notices(id);
        let _ = self.events.send(Event::Question(id.to_owned()));
        // One user's pages: its owner sees every question.
        if !self.mode.announces() {
            let _ = self.frames.send(PageFrame::Show(Shown::to_everyone(frame)));
        }
    }

    /// Question `id` may have left the waiting state: the notices this
    /// server sent of it on a channel that updates them say how it ended.
    fn update_notices(&self, id: &str) {
        if !self.notifier.told(id) {
            return;
        }
        let (store, notifier) = (self.store.clone(), self.notifier.clone());
        let id = id.to_owned();
        tokio::spawn(async move {
            match store.get(id.clone()).await {
                Ok(Some(record)) if record.state != QuestionState::Waiting => {
                    notifier.left(&record);
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, id, "a question's notices could not be updated")
                }
            }
        });
    }

    /// What a team's database announced: a question (asked, or settled by
    /// any server) is read again by its waiters, and open pages hear of it
    /// through `feed` ([`tell_pages`]); anything else (a token revoked, the
    /// listening connection lost or made again) may have changed anything:
    /// every waiter reads again, and every page reconnects, is admitted
    /// again, and reads what waits.
    fn announced(&self, heard: Heard, feed: &tokio::sync::mpsc::UnboundedSender<String>) {
        match heard {
            Heard::Question(id) => {
                self.waiters.wake(id);
                self.update_notices(id);
                if self.frames.receiver_count() > 0 {
                    let _ = feed.send(id.to_owned());
                }
                let _ = self.events.send(Event::Question(id.to_owned()));
            }
            Heard::Revoked | Heard::Lost | Heard::Listening => {
                self.waiters.wake_all();
                let _ = self.frames.send(PageFrame::Reconnect);
                let _ = self.events.send(Event::Missed);
            }
        }
    }

    /// Whether `record`'s agent waits for it now: it is waiting here, or
    /// was a moment ago (between two waits). A team's agent may wait on
    /// another server: it counts while its last wait may still be open.
    fn agent_waiting(&self, record: &Record) -> bool {
        record.state == QuestionState::Waiting
            && (self.waiters.is_attached(&record.id)
                || (crate::now() - record.agent_seen_at < self.presence_millis()
                    && !self.vanished().contains(&record.id)))
    }

    fn vanished(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.vanished.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The agent's wait for `id` ended without a reply: it is gone, and
    /// the pages hear so now.
    fn agent_vanished(&self, id: &str) {
        self.vanished().insert(id.to_owned());
        self.presence_now.notify_one();
    }

    /// The agent of `id` waits again.
    fn agent_back(&self, id: &str) {
        self.vanished().remove(id);
    }

    /// How long after its agent was last seen a question counts as waited
    /// for: between two waits; in a team, also through a whole wait open on
    /// another server (a wait is written when it starts and ends).
    fn presence_millis(&self) -> i64 {
        self.mode.presence_millis()
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
            settled_by: record.settled_by.map(|by| by.as_str().to_owned()),
            answered_by,
            settled_at: record.settled_at.map(crate::rfc3339),
        }
    }
}

impl ChannelHost for Inbox {
    fn waiting(&self) -> crate::store::StoreFuture<'_, Vec<Record>> {
        Box::pin(async move {
            let listing = self.store.list(false, 0).await?;
            pages::report(&listing.unreadable);
            Ok(listing.records)
        })
    }

    fn get(&self, id: String) -> crate::store::StoreFuture<'_, Option<Record>> {
        self.store.get(id)
    }

    fn answer(
        &self,
        id: String,
        answers: Vec<ask_user_seam::Answer>,
        channel: &'static str,
        person: Option<Person>,
    ) -> crate::store::BoxFuture<'_, Result<(), Unsettled>> {
        Box::pin(async move {
            let outcome = Outcome::Result {
                value: ask_user_seam::remote::ResultValue { answers },
            };
            let by = SettledBy::Channel(channel.to_owned());
            match self.settle(&id, outcome, by, person).await {
                Ok(()) => Ok(()),
                Err(Unanswered::Unsettled(unsettled)) => Err(unsettled),
                // Told no more than of a question that left.
                Err(Unanswered::OutsideAudience) => Err(Unsettled::NotPending),
            }
        })
    }

    fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    fn notify_after(&self) -> Duration {
        self.notifier.after()
    }

    fn kept(&self, name: &'static str) -> crate::store::StoreFuture<'_, Option<String>> {
        self.store.channel_state(name.to_owned())
    }

    fn keep(&self, name: &'static str, state: String) -> crate::store::StoreFuture<'_, ()> {
        self.store.keep_channel_state(name.to_owned(), state)
    }

    fn address(&self) -> String {
        self.notifier.address().to_owned()
    }

    fn title(&self, name: &str) -> String {
        self.notifier.title(name)
    }

    fn team(&self) -> bool {
        self.mode.is_team()
    }

    fn person(&self, name: String) -> crate::store::StoreFuture<'_, Option<Person>> {
        self.mode.person(name)
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
