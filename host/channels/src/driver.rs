//! [`serve`]: what drives a two-way channel's [`Work`] from its
//! [`Source`]. Every waiting question is shown (once it has waited the
//! inbox's `notify_after`), and shown again after a failure or missed
//! events; each question is asked or left as the inbox says; each delivery
//! is taken. A service that is down is tried again after a [`Backoff`]; a
//! call it refuses is passed over, and never holds up the rest.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::time::Duration;

use tokio::sync::broadcast;

use ask_user_inbox::notify::{Backoff, ChannelError, ChannelHost, ErrorKind, Event};
use ask_user_inbox::store::{BoxFuture, Millis, Record, State};

/// A two-way channel at work, as [`serve`] drives it: it shows questions,
/// says when they left, and takes what its service delivers. A call its
/// service refuses ([`ErrorKind::Refused`]) is passed over; one it cannot
/// make ([`ErrorKind::Down`]) is made again once the service is back.
pub trait Work: Send {
    /// What its service delivers: an update, an envelope, a reply.
    type Item: Send;

    /// Its kind's name, for the log.
    fn name(&self) -> &'static str;

    fn host(&self) -> &dyn ChannelHost;

    /// Whether `record` is shown here: its audience is the channel's.
    fn shows(&self, record: &Record) -> bool;

    /// The questions it shows now (the inbox's ids).
    fn shown(&self) -> Vec<String>;

    /// Shows what is not shown yet of `record`, which waits. Refused is the
    /// service's word that it will never show it (a model's text it takes
    /// for malformed): the question is passed over here, and every other
    /// goes on.
    fn post(&mut self, record: &Record) -> impl Future<Output = Result<(), ChannelError>> + Send;

    /// Question `id` left (or is gone): what showed it says how, and it is
    /// shown no more.
    fn left(&mut self, id: &str) -> impl Future<Output = Result<(), ChannelError>> + Send;

    /// Takes what the service delivered.
    fn take(&mut self, item: Self::Item) -> impl Future<Output = Result<(), ChannelError>> + Send;

    /// One delivery was taken: what must be kept before the next is asked
    /// for is kept.
    fn taken(&mut self) -> impl Future<Output = ()> + Send;
}

/// Where a channel's deliveries come from: the next ones, and itself back
/// (its connection, how far it read).
pub trait Source: Sized + Send + 'static {
    type Item: Send;

    fn next(self) -> impl Future<Output = (Self, Result<Vec<Self::Item>, ChannelError>)> + Send;
}

/// A call the service refused is done with (it would be refused again):
/// logged, and passed over.
pub fn refused_is_done(error: ChannelError) -> Result<(), ChannelError> {
    match error.kind() {
        ErrorKind::Refused => {
            tracing::debug!(error = error.report(), "a channel's call was refused");
            Ok(())
        }
        _ => Err(error),
    }
}

/// A source given back with what it delivered.
type Delivered<S> = (S, Result<Vec<<S as Source>::Item>, ChannelError>);

/// Drives `work` until the inbox stops: every waiting question shown (and
/// again after a failure, or events missed), each question asked or left as
/// the inbox says so, and each delivery of `source` taken; what could not
/// be reached is tried again after a [`Backoff`], and what was refused is
/// passed over.
pub async fn serve<W: Work, S: Source<Item = W::Item>>(
    work: &mut W,
    source: S,
    events: &mut broadcast::Receiver<Event>,
) {
    use broadcast::error::RecvError;
    let name = work.name();
    let mut reading: BoxFuture<'static, Delivered<S>> = Box::pin(source.next());
    let mut backoff = Backoff::new();
    let mut caught_up = false;
    let mut held = Held::default();
    loop {
        if !caught_up {
            match catch_up(work, &mut held).await {
                Ok(()) => caught_up = true,
                Err(error) => {
                    let wait = backoff.failed();
                    tracing::warn!(
                        channel = name,
                        error = error.report(),
                        ?wait,
                        "the questions could not be shown; trying again"
                    );
                    tokio::time::sleep(wait).await;
                    continue;
                }
            }
        }
        tokio::select! {
            event = events.recv() => {
                let done = match event {
                    Ok(Event::Question(id)) => refresh(work, &id, &mut held).await,
                    // Fell behind: everything is read again.
                    Ok(Event::Missed) | Err(RecvError::Lagged(_)) => {
                        Err(ChannelError::down("events were missed"))
                    }
                    Err(RecvError::Closed) => return,
                };
                if let Err(error) = done.or_else(refused_is_done) {
                    tracing::warn!(channel = name, error = error.report(), "a question could not be shown; trying again");
                    caught_up = false;
                }
            }
            () = held.next_due(), if held.is_waiting() => {
                for id in held.due() {
                    if let Err(error) = refresh(work, &id, &mut held).await.or_else(refused_is_done) {
                        tracing::warn!(channel = name, error = error.report(), "a question could not be shown; trying again");
                        caught_up = false;
                    }
                }
            }
            (source, delivered) = &mut reading => {
                let wait = match delivered {
                    Ok(items) => {
                        backoff.reset();
                        for item in items {
                            match work.take(item).await {
                                Ok(()) => {}
                                Err(error) if error.kind() == ErrorKind::Refused => {
                                    tracing::warn!(channel = name, error = error.report(), "what came was refused; it is passed over");
                                }
                                Err(error) => {
                                    tracing::warn!(channel = name, error = error.report(), "what came could not be handled in full");
                                    caught_up = false;
                                }
                            }
                        }
                        work.taken().await;
                        Duration::ZERO
                    }
                    Err(error) => {
                        let wait = backoff.failed();
                        match error.kind() {
                            ErrorKind::Config => tracing::error!(channel = name, error = error.report(), ?wait, "the channel cannot reach its service until this is mended; trying again"),
                            _ => tracing::warn!(channel = name, error = error.report(), ?wait, "the service cannot be reached; trying again"),
                        }
                        wait
                    }
                };
                reading = Box::pin(async move {
                    tokio::time::sleep(wait).await;
                    source.next().await
                });
            }
        }
    }
}

/// The questions a channel holds back: those its service refused to show
/// (not tried again while they wait), and those too young to be shown
/// (`[inbox] notify_after`), each with when it is due.
#[derive(Default)]
struct Held {
    passed_over: HashSet<String>,
    later: BTreeSet<(Millis, String)>,
}

impl Held {
    /// Whether a question waits to be shown later.
    fn is_waiting(&self) -> bool {
        !self.later.is_empty()
    }

    /// Resolves when the first question held for later is due.
    async fn next_due(&self) {
        let Some((due, _)) = self.later.first() else {
            return std::future::pending().await;
        };
        let wait = u64::try_from(due - ask_user_inbox::now()).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }

    /// The questions due now, no longer held.
    fn due(&mut self) -> Vec<String> {
        let now = ask_user_inbox::now();
        let mut due = Vec::new();
        while self.later.first().is_some_and(|(at, _)| *at <= now) {
            let (_, id) = self.later.pop_first().expect("a first one");
            due.push(id);
        }
        due
    }

    /// Keeps only what is held of `waiting`.
    fn retain(&mut self, waiting: &[Record]) {
        let waits = |id: &String| waiting.iter().any(|record| &record.id == id);
        self.passed_over.retain(waits);
        self.later.retain(|(_, id)| waits(id));
    }
}

/// Every waiting question shown here shown in full, but those held, and
/// every one shown that left said so.
async fn catch_up<W: Work>(work: &mut W, held: &mut Held) -> Result<(), ChannelError> {
    let mut waiting = work.host().waiting().await?;
    waiting.retain(|record| work.shows(record));
    held.retain(&waiting);
    for id in work.shown() {
        if !waiting.iter().any(|record| record.id == id) {
            work.left(&id).await.or_else(refused_is_done)?;
        }
    }
    for record in &waiting {
        show(work, record, held).await?;
    }
    Ok(())
}

/// Shows `record`, unless it is held: one asked less than `notify_after`
/// ago is held until then; one the service refuses for good is passed
/// over, said in the log, and not tried again, so that one question never
/// holds up the others (the page and the other channels still show it).
async fn show<W: Work>(work: &mut W, record: &Record, held: &mut Held) -> Result<(), ChannelError> {
    if held.passed_over.contains(&record.id) {
        return Ok(());
    }
    let after = work.host().notify_after();
    let due = record
        .asked_at
        .saturating_add(i64::try_from(after.as_millis()).unwrap_or(i64::MAX));
    if !after.is_zero() && due > ask_user_inbox::now() && !work.shown().contains(&record.id) {
        held.later.insert((due, record.id.clone()));
        return Ok(());
    }
    match work.post(record).await {
        Err(error) if error.kind() == ErrorKind::Refused => {
            held.passed_over.insert(record.id.clone());
            tracing::warn!(
                channel = work.name(),
                id = record.id,
                error = error.report(),
                "the service refused to show a question; it is not shown there (the page \
                 and the other channels show it)"
            );
            Ok(())
        }
        shown => shown,
    }
}

/// Question `id` was asked or left: shown, or said to have left.
async fn refresh<W: Work>(work: &mut W, id: &str, held: &mut Held) -> Result<(), ChannelError> {
    match work.host().get(id.to_owned()).await {
        Ok(Some(record)) if record.state == State::Waiting && work.shows(&record) => {
            show(work, &record, held).await
        }
        Ok(_) => work.left(id).await,
        Err(error) => Err(error.into()),
    }
}

/// Question `id` as it is, while it waits; one that left is said so
/// (`work.left`), and is `None`.
pub async fn still_waiting<W: Work>(
    work: &mut W,
    id: &str,
) -> Result<Option<Record>, ChannelError> {
    match work.host().get(id.to_owned()).await {
        Ok(Some(record)) if record.state == State::Waiting => Ok(Some(record)),
        Ok(_) => work.left(id).await.map(|()| None),
        Err(error) => Err(error.into()),
    }
}
