//! Telling the human that an agent is waiting, and taking their answer
//! where they are. Each channel is opt-in, by its key in `[inbox.notify]`
//! or `[inbox.channels]` (one registry, two names for its table:
//! `desktop = true`, `ntfy = "https://…"`, `webhook = "https://…"`,
//! `[inbox.channels.telegram]`), and is a [`ChannelKind`] in the
//! [`Channels`] registry: a new channel is one module here and one line in
//! [`Channels::builtin`].
//!
//! A channel either notifies ([`Channel`]: each notification runs on its
//! own task within [`NOTIFY_TIMEOUT`]; one that fails is logged, and never
//! delays or fails an ask) or is two-way ([`TwoWay`]: it runs while the
//! inbox serves, shows each question where the human is, and answers it
//! through the inbox's [`Desk`], by the same rules as the page).
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

use crate::store::Record;

mod chat;
mod desktop;
mod ntfy;
mod slack;
mod telegram;
pub mod two_way;
mod webhook;

pub use two_way::{Desk, Event, TwoWay};

/// How long one notification may take.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// A kind of channel: its key in `[inbox.notify]`, and the channel its value
/// there configures.
pub trait ChannelKind: Send + Sync + 'static {
    fn name(&self) -> &'static str;

    /// The channel `value` configures. An error says what the value should
    /// be.
    fn configure(&self, value: &toml::Value) -> Result<Configured, String>;
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
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
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

/// The channel kinds `[inbox.notify]` may name.
pub struct Channels {
    kinds: Vec<Box<dyn ChannelKind>>,
}

impl Channels {
    /// The channels that ship with the inbox: desktop, ntfy, webhook,
    /// telegram, slack.
    pub fn builtin() -> Self {
        let mut channels = Channels { kinds: Vec::new() };
        channels.register(desktop::Desktop);
        channels.register(ntfy::Ntfy);
        channels.register(webhook::Webhook);
        channels.register(telegram::Telegram);
        channels.register(slack::Slack);
        channels
    }

    /// Adds `kind`, replacing a kind of the same name.
    pub fn register(&mut self, kind: impl ChannelKind) {
        self.kinds.retain(|k| k.name() != kind.name());
        self.kinds.push(Box::new(kind));
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

impl Default for Channels {
    fn default() -> Self {
        Self::builtin()
    }
}

/// The channels configured: those that notify, and the two-way ones.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    channels: Vec<Arc<dyn Channel>>,
    two_way: Vec<Arc<dyn TwoWay>>,
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

    /// The two-way channels.
    pub fn two_way(&self) -> &[Arc<dyn TwoWay>] {
        &self.two_way
    }
}

/// Sends the notifications of new questions, and of questions still
/// waiting past the escalation time.
pub(crate) struct Notifier {
    channels: Notifications,
    escalation: Option<Escalation>,
    /// The inbox's address, without its token.
    address: String,
    http: reqwest::Client,
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
        address: String,
    ) -> std::io::Result<Self> {
        Ok(Notifier {
            channels,
            escalation,
            address,
            http: crate::http_client(None)?,
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
    /// `escalated`), and returns once each was sent, failed or gave up.
    pub(crate) async fn deliver(&self, record: &Record, escalated: bool) {
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
            .sendings(channels, record, &lead, || None)
            .into_iter()
            .map(tokio::spawn)
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    }

    /// The address notifications link to: the page's, without any way in.
    pub(crate) fn address(&self) -> &str {
        &self.address
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
                record.session, record.agent
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
                async move {
                    match tokio::time::timeout(NOTIFY_TIMEOUT, sending).await {
                        Ok(Ok(())) => tracing::debug!(kind, "notified"),
                        Ok(Err(error)) => tracing::warn!(kind, %error, "a notification failed"),
                        Err(_) => {
                            tracing::warn!(kind, "a notification took too long and was dropped")
                        }
                    }
                }
            })
            .collect()
    }
}

/// Sends `request`; a reply that is not a success is a failure, down or
/// refused by its status ([`two_way::Failure::of_status`]). What failed is
/// said without the URL, which may hold a secret (an ntfy topic, a
/// webhook's path).
async fn sent(request: reqwest::RequestBuilder) -> Result<(), two_way::Failure> {
    let response = request
        .send()
        .await
        .map_err(|e| two_way::Failure::Down(e.without_url().to_string()))?;
    match response.status() {
        status if status.is_success() => Ok(()),
        status => Err(two_way::Failure::of_status(status)),
    }
}

/// The most of a chat service's reply that is read (a Slack reply or
/// event, a batch of Telegram updates): a service that sends more is
/// taken as down, and nothing of it stays in memory.
pub const MAX_REPLY_BYTES: usize = 4 << 20;

/// The body of `response`, read up to [`MAX_REPLY_BYTES`]; a longer one is
/// an error saying so (with no address: it may hold a token).
async fn reply_body(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let over = || format!("a reply of over {} MiB", MAX_REPLY_BYTES >> 20);
    if response
        .content_length()
        .is_some_and(|length| length > MAX_REPLY_BYTES as u64)
    {
        return Err(over());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| e.without_url().to_string())?
    {
        if body.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(over());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The URL a channel posts to, from its value in `[inbox.notify]`.
fn url(value: &toml::Value) -> Result<String, String> {
    match value.as_str() {
        Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
            Ok(url.to_owned())
        }
        _ => Err(format!("{value} is not an http:// or https:// URL")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn each_key_names_a_channel_and_a_mistake_says_what_would_do() {
        let channels = Channels::builtin();
        assert_eq!(
            channels.names(),
            ["desktop", "ntfy", "webhook", "telegram", "slack"]
        );
        let on = channels
            .configure(&table(
                "desktop = true\nwebhook = \"https://hooks.example/x\"",
            ))
            .unwrap();
        assert_eq!(on.names(), ["desktop", "webhook"]);
        assert!(
            channels
                .configure(&table("desktop = false"))
                .unwrap()
                .names()
                .is_empty()
        );
        let unknown = channels.configure(&table("discord = \"x\"")).unwrap_err();
        assert!(
            unknown.contains("no channel `discord`")
                && unknown.contains("desktop, ntfy, webhook, telegram, slack"),
            "{unknown}"
        );
        let wrong = channels.configure(&table("ntfy = 3")).unwrap_err();
        assert!(wrong.contains("ntfy: 3 is not an http"), "{wrong}");
        let wrong = channels.configure(&table("desktop = \"yes\"")).unwrap_err();
        assert!(wrong.contains("true or false"), "{wrong}");
    }
}
