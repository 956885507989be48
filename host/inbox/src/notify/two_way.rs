//! The inbox's side of a two-way channel: the [`TwoWay`] channel it runs,
//! the [`ChannelHost`] it answers through (the page's rules: first answer wins,
//! answers checked against the question, a person against its audience),
//! and the [`Event`]s it hears. The channels themselves, and what they
//! share (the driver, a batch's answers, a button's data), are the
//! `ask-user-channels` crate's.
//!
//! A channel runs on one server at a time: one user's inbox, or the one of
//! a team's servers that holds its lease (another takes over when it
//! goes); what it keeps is in the store, which they share.

use std::fmt::Debug;
use std::sync::Arc;

use tokio::sync::broadcast;

use ask_user_seam::Answer;
use ask_user_seam::remote::Unsettled;

use super::ChannelError;
use crate::store::{BoxFuture, Person, Record, StoreFuture};

/// A channel that shows the inbox's questions where the human is and takes
/// their answers there, over connections it opens itself.
pub trait TwoWay: Send + Sync + Debug + 'static {
    /// Its kind's name, for the log and as who settled a question.
    fn name(&self) -> &'static str;

    /// Whether what the channel reads when the inbox starts (its tokens,
    /// never in the config itself) can be read: the error says what is
    /// missing. `inbox serve` refuses to start without it.
    fn check(&self) -> Result<(), ChannelError>;

    /// Runs while the inbox serves (it is dropped when the inbox stops):
    /// shows every waiting question, answers them through `host`, and says
    /// on what it showed when a question left. A failure to reach its
    /// service is logged and tried again; it never ends the inbox.
    fn run(self: Arc<Self>, host: Arc<dyn ChannelHost>) -> BoxFuture<'static, ()>;
}

/// What the inbox gives a two-way channel: the channel's host.
pub trait ChannelHost: Send + Sync + 'static {
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

    /// What channel `name` kept (its state, as JSON: the updates read,
    /// what it posted).
    fn kept(&self, name: &'static str) -> StoreFuture<'_, Option<String>>;

    /// Keeps `state` for channel `name`.
    fn keep(&self, name: &'static str, state: String) -> StoreFuture<'_, ()>;

    /// The address of the inbox's page, without any way in (where a
    /// channel that cannot take an answer sends the human).
    fn address(&self) -> String;

    /// Whether this is a team's inbox: who answers must be one of its
    /// people ([`ChannelHost::person`]).
    fn team(&self) -> bool;

    /// In a team's inbox, its person `name` (with their token's groups),
    /// unless there is none, or their token was revoked. `None` in one
    /// user's inbox.
    fn person(&self, name: String) -> StoreFuture<'_, Option<Person>>;

    /// Channel `name` as its service spells it (`Telegram`), to say where a
    /// question was answered; a name no kind has, as it is.
    fn title(&self, name: &str) -> String;

    /// How long a question waits before a channel shows it (`[inbox]
    /// notify_after`): one that left by then is never shown. Zero: at once.
    fn notify_after(&self) -> std::time::Duration;
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
