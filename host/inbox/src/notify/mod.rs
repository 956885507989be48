//! Telling the human that an agent is waiting, and taking their answer
//! where they are: the contract a channel meets, the registry of kinds the
//! config names, and the [`Notifier`] that sends notifications. The
//! channels themselves are the `ask-user-channels` crate's; the program
//! hands its registry ([`Channels`]) to the config's reader.
//!
//! Each channel is opt-in, by its key in `[inbox.notify]` or
//! `[inbox.channels]` (one registry, two names for its table:
//! `desktop = true`, `ntfy = "https://…"`, `[inbox.channels.telegram]`),
//! and is a [`ChannelKind`]. A channel either notifies ([`Channel`]: each
//! notification runs on its own task within [`NOTIFY_TIMEOUT`]; one that
//! fails is logged, and never delays or fails an ask) or is two-way
//! ([`TwoWay`]: it runs while the inbox serves, shows each question where
//! the human is, and answers it through the inbox's [`ChannelHost`], by the same
//! rules as the page). Every failure is a [`ChannelError`], typed by what
//! the inbox does next.
//!
//! No notification carries the page's token. A channel that stays on this
//! machine (the desktop) gets a one-time link ([`Note::link`]: it works
//! once, so a notification history keeps nothing of worth); the others get
//! the address alone (they pass through other people's servers): open the
//! page with `ask-user inbox page`. The model's words are text in every
//! channel ([`ask_user_seam::text`]): each channel escapes [`Note::text`] for where
//! it goes.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::store::Record;

mod backoff;
mod error;
mod two_way;

pub use backoff::Backoff;
pub use error::{ChannelError, ErrorKind};
pub use two_way::{ChannelHost, Event, TwoWay};

/// How long one notification may take.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// A kind of channel, declared once: its key in the config, its name as
/// its service spells it, what its value there is, and the channel that
/// value configures (after spin's key-value store kinds).
pub trait ChannelKind: Send + Sync + 'static {
    /// Its key in `[inbox.notify]` and `[inbox.channels]`, its name in the
    /// log, and who settled a question answered there.
    const NAME: &'static str;

    /// Its name as its service spells it (`Telegram`).
    const TITLE: &'static str;

    /// Its value in the config, as written; a value that does not read as
    /// one is an error saying what it should be.
    type Config: DeserializeOwned;

    /// The channel `config` configures. An error ([`ErrorKind::Config`])
    /// says what the value should be.
    fn configure(&self, config: Self::Config) -> Result<Configured, ChannelError>;
}

/// What a channel's value configured.
pub enum Configured {
    /// Nothing: the value turns it off (`desktop = false`).
    Off,
    /// A channel that notifies.
    Notifies(Arc<dyn Channel>),
    /// A channel that shows the questions and takes their answers.
    TwoWay(Arc<dyn TwoWay>),
}

/// A channel, configured.
pub trait Channel: Send + Sync + Debug + 'static {
    /// Its kind's name, for the log.
    fn name(&self) -> &'static str;

    /// Whether it stays on this machine, so that a one-time link to the
    /// page may go into it ([`Note::link`]).
    fn local(&self) -> bool {
        false
    }

    /// Sends `note`, with `http` for a channel that posts.
    fn send(
        &self,
        note: Arc<Note>,
        http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), ChannelError>> + Send>>;

    /// Whether it updates what it sent when the question leaves
    /// ([`left`](Self::left)); by default, a notice stays as sent.
    fn updates(&self) -> bool {
        false
    }

    /// The question `note` told of left the waiting state ([`Note::text`]
    /// says how: "Answered on the page"…): the update of what was sent.
    /// Called only where the channel [`updates`](Self::updates).
    fn left(
        &self,
        _note: Arc<Note>,
        _http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), ChannelError>> + Send>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// How a question left the waiting state, as its notices say it
/// ("Answered on the page by ana", "Dismissed in Telegram", "Withdrawn: …"),
/// a channel named as its service spells it (`title`).
pub fn outcome_line(record: &Record, title: &dyn Fn(&str) -> String) -> String {
    use crate::store::{SettledBy, State};
    let place = match &record.settled_by {
        Some(SettledBy::Page) => " on the page".to_owned(),
        Some(SettledBy::Command) => " from the command line".to_owned(),
        Some(SettledBy::Channel(name)) => format!(" in {}", title(name)),
        Some(SettledBy::Agent(_) | SettledBy::Retention) | None => String::new(),
    };
    let by = record
        .answered_by
        .as_deref()
        .map(|name| format!(" by {name}"))
        .unwrap_or_default();
    match (record.state, &record.settled_by) {
        (State::Answered | State::Waiting, _) => format!("Answered{place}{by}"),
        (State::Cancelled, _) => format!("Dismissed{place}{by}"),
        (State::Withdrawn, Some(SettledBy::Agent(reason))) if !reason.is_empty() => {
            format!("Withdrawn: {reason}")
        }
        (State::Withdrawn, _) => "Withdrawn by its agent".to_owned(),
        (State::Expired, _) => "Expired: its agent was gone too long".to_owned(),
    }
}

/// What a notification says.
#[derive(Debug)]
pub struct Note {
    /// The question asked.
    pub record: Record,
    /// The first question, "(and N more)", and who asked: the model's and
    /// the agent's words, as they are (escape them for the channel).
    pub text: String,
    /// The inbox's page address, without any way in.
    pub address: String,
    /// A one-time link to the page, when a [local](Channel::local) channel
    /// is configured.
    pub link: Option<String>,
}

impl Note {
    /// The text of each question, in order.
    pub fn questions(&self) -> Vec<&str> {
        questions(&self.record)
    }
}

fn questions(record: &Record) -> Vec<&str> {
    record
        .request
        .questions
        .iter()
        .map(|q| q.question.as_str())
        .collect()
}

/// Runs `what` (a notification, an update) of channel `kind` within
/// [`NOTIFY_TIMEOUT`], logging how it went; whether it was sent.
async fn bounded(
    kind: &'static str,
    what: &'static str,
    sending: impl Future<Output = Result<(), ChannelError>>,
) -> bool {
    match tokio::time::timeout(NOTIFY_TIMEOUT, sending).await {
        Ok(Ok(())) => {
            tracing::debug!(kind, what, "sent");
            true
        }
        Ok(Err(error)) => {
            tracing::warn!(kind, what, error = error.report(), "failed");
            false
        }
        Err(_) => {
            tracing::warn!(kind, what, "took too long and was dropped");
            false
        }
    }
}

/// The questions told of, locked: a panic elsewhere leaves them usable.
fn lock(
    told: &std::sync::Mutex<std::collections::HashSet<String>>,
) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
    told.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A [`ChannelKind`] as the registry holds it.
trait Kind: Send + Sync {
    fn name(&self) -> &'static str;
    fn title(&self) -> &'static str;
    fn configure(&self, value: &toml::Value) -> Result<Configured, String>;
}

struct Registered<K>(K);

impl<K: ChannelKind> Kind for Registered<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn title(&self) -> &'static str {
        K::TITLE
    }

    fn configure(&self, value: &toml::Value) -> Result<Configured, String> {
        let config: K::Config = value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.message().to_owned())?;
        self.0.configure(config).map_err(|e| e.report())
    }
}

/// The channel kinds the config may name: none, until the program
/// registers its own (`ask_user_channels::register`).
#[derive(Default)]
pub struct Channels {
    kinds: Vec<Box<dyn Kind>>,
}

impl Channels {
    /// No kinds.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `kind`, replacing a kind of the same name.
    pub fn register<K: ChannelKind>(&mut self, kind: K) {
        self.kinds.retain(|k| k.name() != K::NAME);
        self.kinds.push(Box::new(Registered(kind)));
    }

    /// The names of every kind, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.kinds.iter().map(|k| k.name()).collect()
    }

    /// The channels `table` (`[inbox.notify]`) configures, in the table's
    /// order. A key that names no channel, or a value a channel does not
    /// take, is an error that says which and what would do.
    pub fn configure(&self, table: &toml::Table) -> Result<Notifications, String> {
        let mut notifications = Notifications::default();
        self.add(table, "[inbox.notify]", &mut notifications)?;
        Ok(notifications)
    }

    /// Adds the channels `table` (called `name` in errors) configures to
    /// `notifications`; a channel configured twice is an error.
    pub fn add(
        &self,
        table: &toml::Table,
        name: &str,
        notifications: &mut Notifications,
    ) -> Result<(), String> {
        notifications.titles = self.kinds.iter().map(|k| (k.name(), k.title())).collect();
        for (key, value) in table {
            let kind = self.kinds.iter().find(|k| k.name() == key).ok_or_else(|| {
                format!(
                    "{name} has no channel `{key}`; the channels are {}",
                    self.names().join(", ")
                )
            })?;
            if notifications.names().contains(&kind.name()) {
                return Err(format!(
                    "{name} {key}: the channel is configured twice ([inbox.notify] and \
                     [inbox.channels] are one table); keep one"
                ));
            }
            match kind
                .configure(value)
                .map_err(|why| format!("{name} {key}: {why}"))?
            {
                Configured::Off => {}
                Configured::Notifies(channel) => notifications.channels.push(channel),
                Configured::TwoWay(channel) => notifications.two_way.push(channel),
            }
        }
        Ok(())
    }
}

/// The channels configured: those that notify, and the two-way ones.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    channels: Vec<Arc<dyn Channel>>,
    two_way: Vec<Arc<dyn TwoWay>>,
    /// Each registered kind's name and title.
    titles: Vec<(&'static str, &'static str)>,
}

impl Notifications {
    /// Whether no channel is configured.
    pub fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.two_way.is_empty()
    }

    /// The names of the channels, those that notify first.
    pub fn names(&self) -> Vec<&'static str> {
        let two_way = self.two_way.iter().map(|c| c.name());
        self.channels
            .iter()
            .map(|c| c.name())
            .chain(two_way)
            .collect()
    }

    /// The name of a channel that stays on this machine
    /// ([`Channel::local`]), when one is configured.
    pub fn local(&self) -> Option<&'static str> {
        self.channels.iter().find(|c| c.local()).map(|c| c.name())
    }

    /// The two-way channels.
    pub fn two_way(&self) -> &[Arc<dyn TwoWay>] {
        &self.two_way
    }

    /// Channel `name` as its service spells it; a name no kind has, as it
    /// is.
    pub fn title(&self, name: &str) -> String {
        self.titles
            .iter()
            .find(|(kind, _)| *kind == name)
            .map_or(name, |(_, title)| title)
            .to_owned()
    }
}

/// Sends the notifications of new questions, and of questions still
/// waiting past the escalation time.
pub(crate) struct Notifier {
    channels: Notifications,
    escalation: Option<Escalation>,
    /// How long a question waits before any channel tells of it.
    after: Duration,
    /// The inbox's address, without its token.
    address: String,
    http: reqwest::Client,
    /// The questions a channel that updates what it sent told of, until
    /// they leave (this server's: a restart forgets them, and their
    /// notices stay as sent).
    told: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
}

/// `[inbox.escalate]`: a question still waiting `after` it was asked is
/// sent on these channels too.
#[derive(Debug, Clone)]
pub struct Escalation {
    pub after: Duration,
    pub channels: Notifications,
}

impl Notifier {
    pub(crate) fn new(
        channels: Notifications,
        escalation: Option<Escalation>,
        after: Duration,
        address: String,
    ) -> std::io::Result<Self> {
        Ok(Notifier {
            channels,
            escalation,
            after,
            address,
            http: crate::http_client(None)?,
            told: Default::default(),
        })
    }

    /// A question arrived: sends it on every channel, each on a task of its
    /// own; `link` makes the one-time link a local channel carries.
    pub(crate) fn arrived(&self, record: &Record, link: impl FnOnce() -> Option<String>) {
        for sending in self.sendings(&self.channels, record, "", link) {
            tokio::spawn(sending);
        }
    }

    /// Sends `record` on every channel (the escalation's, when
    /// `escalated`), and returns once each was sent, failed or gave up;
    /// `link` makes the one-time link a local channel carries.
    pub(crate) async fn deliver(
        &self,
        record: &Record,
        escalated: bool,
        link: impl FnOnce() -> Option<String>,
    ) {
        let (channels, lead) = match (&self.escalation, escalated) {
            (Some(escalation), true) => (
                &escalation.channels,
                format!(
                    "Still waiting after {}: ",
                    humantime::format_duration(escalation.after)
                ),
            ),
            (None, true) => return,
            (_, false) => (&self.channels, String::new()),
        };
        let tasks: Vec<_> = self
            .sendings(channels, record, &lead, link)
            .into_iter()
            .map(tokio::spawn)
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Whether a channel that updates what it sent told of question `id`.
    pub(crate) fn told(&self, id: &str) -> bool {
        lock(&self.told).contains(id)
    }

    /// `record` left the waiting state: each channel that told of it
    /// updates its notice, saying how (once; each on its own task, within
    /// [`NOTIFY_TIMEOUT`]).
    pub(crate) fn left(&self, record: &Record) {
        if !lock(&self.told).remove(&record.id) {
            return;
        }
        let first = questions(record).first().copied().unwrap_or_default();
        let note = Arc::new(Note {
            text: format!(
                "{}\n{first}",
                outcome_line(record, &|name| self.title(name))
            ),
            record: record.clone(),
            address: self.address.clone(),
            link: None,
        });
        for channel in self.channels.channels.iter().filter(|c| c.updates()) {
            let (kind, update) = (
                channel.name(),
                channel.left(note.clone(), self.http.clone()),
            );
            tokio::spawn(bounded(kind, "a notice's update", update));
        }
    }

    /// The address notifications link to: the page's, without any way in.
    pub(crate) fn address(&self) -> &str {
        &self.address
    }

    /// Channel `name` as its service spells it.
    pub(crate) fn title(&self, name: &str) -> String {
        self.channels.title(name)
    }

    /// How long a question waits before any channel tells of it
    /// (`[inbox] notify_after`): one that left by then is told nowhere.
    pub(crate) fn after(&self) -> Duration {
        self.after
    }

    /// How long after a question was asked it is escalated, when it is.
    pub(crate) fn escalates_after(&self) -> Option<Duration> {
        self.escalation.as_ref().map(|escalation| escalation.after)
    }

    /// One sending of `record` per channel of `channels`, each within
    /// [`NOTIFY_TIMEOUT`], logging how it went.
    fn sendings(
        &self,
        channels: &Notifications,
        record: &Record,
        lead: &str,
        link: impl FnOnce() -> Option<String>,
    ) -> Vec<impl Future<Output = ()> + Send + 'static> {
        let channels = &channels.channels;
        if channels.is_empty() {
            return Vec::new();
        }
        let questions = questions(record);
        let first = questions.first().copied().unwrap_or_default();
        let more = match questions.len() {
            0 | 1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let note = Arc::new(Note {
            text: format!(
                "{lead}{first}{more}\nsession {} · {}",
                ask_user_seam::text::session(&record.session),
                record.asker()
            ),
            record: record.clone(),
            address: self.address.clone(),
            link: channels.iter().any(|c| c.local()).then(link).flatten(),
        });
        channels
            .iter()
            .map(|channel| {
                let kind = channel.name();
                let sending = channel.send(note.clone(), self.http.clone());
                // Kept as it is sent, for the update when the question
                // leaves (which may be while it is sent); forgotten if it
                // never arrives.
                let told = channel.updates().then(|| {
                    let told = self.told.clone();
                    lock(&told).insert(record.id.clone());
                    (told, record.id.clone())
                });
                async move {
                    let sent = bounded(kind, "a notification", sending).await;
                    if let (false, Some((told, id))) = (sent, told) {
                        lock(&told).remove(&id);
                    }
                }
            })
            .collect()
    }
}
