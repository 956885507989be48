//! What every two-way channel shares: the inbox's [`Desk`] it answers
//! through (the page's rules: first answer wins, answers checked against
//! the question), the [`Event`]s it hears, what it keeps across restarts
//! in the inbox's store ([`Kept`]), how it waits before trying again
//! ([`Backoff`]), and how a question's outcome reads ([`outcome_line`]).
//!
//! A channel runs on one server at a time: one user's inbox, or the one of
//! a team's servers that holds its lease (another takes over when it
//! goes); what it keeps is in the store, which they share.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

use ask_user_seam::Answer;
use ask_user_seam::remote::Unsettled;

use crate::store::{BoxFuture, Person, Record, SettledBy, State, StoreError, StoreFuture};

/// A channel that shows the inbox's questions where the human is and takes
/// their answers there, over connections it opens itself.
pub trait TwoWay: Send + Sync + Debug + 'static {
    /// Its kind's name, for the log and as who settled a question.
    fn name(&self) -> &'static str;

    /// Runs while the inbox serves (it is dropped when the inbox stops):
    /// shows every waiting question, answers them through `desk`, and says
    /// on what it showed when a question left. A failure to reach its
    /// service is logged and tried again; it never ends the inbox.
    fn run(self: Arc<Self>, desk: Arc<dyn Desk>) -> BoxFuture<'static, ()>;
}

/// What the inbox gives a two-way channel.
pub trait Desk: Send + Sync + 'static {
    /// The questions waiting now.
    fn waiting(&self) -> StoreFuture<'_, Vec<Record>>;

    /// The question `id`, in whatever state.
    fn get(&self, id: String) -> StoreFuture<'_, Option<Record>>;

    /// Answers `id` with `answers` from `person` (when the channel knows
    /// who) on `channel`, by the page's rules: checked against its
    /// questions (and a person against its audience), and only while it
    /// waits.
    fn answer(
        &self,
        id: String,
        answers: Vec<Answer>,
        channel: &'static str,
        person: Option<Person>,
    ) -> BoxFuture<'_, Result<(), Unsettled>>;

    /// What happened to the questions, from now on.
    fn events(&self) -> broadcast::Receiver<Event>;

    /// What channel `name` kept ([`Kept`]).
    fn kept(&self, name: &'static str) -> StoreFuture<'_, Option<String>>;

    /// Keeps `state` for channel `name`.
    fn keep(&self, name: &'static str, state: String) -> StoreFuture<'_, ()>;

    /// The address of the inbox's page, without any way in (where a
    /// channel that cannot take an answer sends the human).
    fn address(&self) -> String;

    /// Whether this is a team's inbox: who answers must be one of its
    /// people ([`Desk::person`]).
    fn team(&self) -> bool;

    /// In a team's inbox, its person `name` (with their token's groups),
    /// unless there is none, or their token was revoked. `None` in one
    /// user's inbox.
    fn person(&self, name: String) -> StoreFuture<'_, Option<Person>>;
}

/// What happened.
#[derive(Debug, Clone)]
pub enum Event {
    /// Question `id` was asked or left the waiting state (answered
    /// anywhere, dismissed, withdrawn, expired): read it again.
    Question(String),
    /// Anything may have changed (events were missed): read every question
    /// again.
    Missed,
}

/// A channel's state, kept as JSON in the inbox's store: written whole,
/// so that a crash leaves the old state or the new one.
pub struct Kept {
    name: &'static str,
}

impl Kept {
    pub fn new(name: &'static str) -> Self {
        Kept { name }
    }

    /// What was kept; nothing kept yet, or a state that cannot be read
    /// (logged), is the default.
    pub async fn load<T: DeserializeOwned + Default>(
        &self,
        desk: &dyn Desk,
    ) -> Result<T, StoreError> {
        let Some(text) = desk.kept(self.name).await? else {
            return Ok(T::default());
        };
        Ok(serde_json::from_str(&text).unwrap_or_else(|error| {
            tracing::warn!(channel = self.name, %error, "a channel's state could not be read; it starts again");
            T::default()
        }))
    }

    /// Keeps `state`.
    pub async fn save<T: Serialize>(&self, desk: &dyn Desk, state: &T) -> Result<(), StoreError> {
        let text = serde_json::to_string(state).map_err(StoreError::backend)?;
        desk.keep(self.name, text).await
    }
}

/// How long to wait before trying a service again: one second, doubled at
/// each failure up to a minute, and one second again after a success.
#[derive(Debug)]
pub struct Backoff {
    next: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_secs(1);
    const MOST: Duration = Duration::from_secs(60);

    pub fn new() -> Self {
        Backoff { next: Self::FIRST }
    }

    /// It failed: how long to wait now.
    pub fn failed(&mut self) -> Duration {
        let wait = self.next;
        self.next = (self.next * 2).min(Self::MOST);
        wait
    }

    /// It worked.
    pub fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

/// An answer as one line: the labels chosen and the own words, or
/// "skipped".
pub fn answer_line(answer: &Answer) -> String {
    let mut parts: Vec<String> = answer.selected.clone();
    if let Some(custom) = &answer.custom {
        parts.push(format!("“{custom}”"));
    }
    match parts.is_empty() {
        true => "skipped".to_owned(),
        false => parts.join(", "),
    }
}

/// What became of `record`, which left the waiting state, in a line: how,
/// where and by whom ("Answered in Telegram by @ana", "Withdrawn: the
/// call was aborted").
pub fn outcome_line(record: &Record) -> String {
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

/// The answers stored with `record`, when it was answered.
pub fn answers_of(record: &Record) -> Vec<Answer> {
    record
        .outcome
        .as_ref()
        .and_then(|outcome| outcome.get("value")?.get("answers"))
        .and_then(|answers| serde_json::from_value(answers.clone()).ok())
        .unwrap_or_default()
}

/// A channel's name as its service spells it.
fn title(name: &str) -> &str {
    match name {
        "telegram" => "Telegram",
        "slack" => "Slack",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute_and_starts_again_after_a_success() {
        let mut backoff = Backoff::new();
        let waits: Vec<u64> = (0..8).map(|_| backoff.failed().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
        backoff.reset();
        assert_eq!(backoff.failed(), Duration::from_secs(1));
    }

    #[test]
    fn an_answer_reads_as_its_labels_and_own_words() {
        let answer = Answer {
            id: "q".into(),
            selected: vec!["Tests".into(), "Docs".into()],
            custom: Some("and the bench".into()),
        };
        assert_eq!(answer_line(&answer), "Tests, Docs, “and the bench”");
        assert_eq!(answer_line(&Answer::skipped("q")), "skipped");
    }
}
