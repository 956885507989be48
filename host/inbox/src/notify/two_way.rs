//! What every two-way channel shares:
//!
//! - the inbox's [`Desk`] it answers through (the page's rules: first
//!   answer wins, answers checked against the question, a person against
//!   its audience), and the [`Event`]s it hears;
//! - [`serve`], which drives a channel's [`Work`] from its [`Source`]:
//!   every waiting question shown, and shown again after a failure or
//!   missed events, each question asked or left, each delivery taken, with
//!   a [`Backoff`] while the service cannot be reached;
//! - a batch's answers collected question by question ([`Batch`]), who
//!   answers ([`person`]), a button's opaque data ([`Press`]: untrusted,
//!   checked against what was posted), what a channel keeps in the store
//!   ([`Kept`]), where its secrets come from ([`secret_from`], [`Secret`]),
//!   and how the model's words and a question's outcome read ([`words`],
//!   [`escape`], [`outcome_line`]).
//!
//! A channel runs on one server at a time: one user's inbox, or the one of
//! a team's servers that holds its lease (another takes over when it
//! goes); what it keeps is in the store, which they share.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use ask_user_seam::Answer;
use ask_user_seam::remote::Unsettled;

use crate::answerer::TokenSource;
use crate::store::{BoxFuture, Person, Record, SettledBy, State, StoreError, StoreFuture};

/// A channel that shows the inbox's questions where the human is and takes
/// their answers there, over connections it opens itself.
pub trait TwoWay: Send + Sync + Debug + 'static {
    /// Its kind's name, for the log and as who settled a question.
    fn name(&self) -> &'static str;

    /// Whether what the channel reads when the inbox starts (its tokens,
    /// never in the config itself) can be read: the error says what is
    /// missing. `inbox serve` refuses to start without it.
    fn check(&self) -> Result<(), String>;

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

/// A two-way channel at work, as [`serve`] drives it: it shows questions,
/// says when they left, and takes what its service delivers.
pub trait Work: Send {
    /// What its service delivers: an update, an envelope, a reply.
    type Item: Send;

    /// Its kind's name, for the log.
    fn name(&self) -> &'static str;

    fn desk(&self) -> &dyn Desk;

    /// Whether `record` is shown here: its audience is the channel's.
    fn shows(&self, record: &Record) -> bool;

    /// The questions it shows now (the inbox's ids).
    fn shown(&self) -> Vec<String>;

    /// Shows what is not shown yet of `record`, which waits. A
    /// [`Failure::Refused`] is the service's word that it will never show
    /// it (a model's text it takes for malformed): the question is passed
    /// over here, and every other goes on.
    fn post(&mut self, record: &Record) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Question `id` left (or is gone): what showed it says how, and it is
    /// shown no more.
    fn left(&mut self, id: &str) -> impl Future<Output = Result<(), String>> + Send;

    /// Takes what the service delivered.
    fn take(&mut self, item: Self::Item) -> impl Future<Output = Result<(), String>> + Send;

    /// One delivery was taken: what must be kept before the next is asked
    /// for is kept.
    fn taken(&mut self) -> impl Future<Output = ()> + Send;
}

/// Where a channel's deliveries come from: the next ones, and itself back
/// (its connection, how far it read).
pub trait Source: Sized + Send + 'static {
    type Item: Send;

    fn next(self) -> impl Future<Output = (Self, Result<Vec<Self::Item>, String>)> + Send;
}

/// Why a call to a channel's service failed.
#[derive(Debug)]
pub enum Failure {
    /// The service could not be reached, or failed: try again later.
    Down(String),
    /// The service refused the call (a message deleted, a query too old):
    /// the same call would be refused again.
    Refused(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Down(why) | Failure::Refused(why) => f.write_str(why),
        }
    }
}

impl Failure {
    /// What a reply with HTTP status `status` says: a service that is busy
    /// (429) or failing (5xx) may take it later; any other refusal is for
    /// good.
    pub fn of_status(status: reqwest::StatusCode) -> Failure {
        let why = format!("the server replied {status}");
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Failure::Down(why)
        } else {
            Failure::Refused(why)
        }
    }
}

/// A call the service refused is done with (it would be refused again):
/// logged, and passed over.
pub fn refused_is_done(failure: Failure) -> Result<(), Failure> {
    match failure {
        Failure::Refused(why) => {
            tracing::debug!(why, "a channel's call was refused");
            Ok(())
        }
        down => Err(down),
    }
}

/// A source given back with what it delivered.
type Delivered<S> = (S, Result<Vec<<S as Source>::Item>, String>);

/// Drives `work` until the inbox stops: every waiting question shown (and
/// again after a failure, or events missed), each question asked or left as
/// the inbox says so, and each delivery of `source` taken; what could not
/// be reached is tried again after a [`Backoff`].
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
    loop {
        if !caught_up {
            match catch_up(work).await {
                Ok(()) => caught_up = true,
                Err(failure) => {
                    let wait = backoff.failed();
                    tracing::warn!(
                        channel = name,
                        failure,
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
                    Ok(Event::Question(id)) => refresh(work, &id).await,
                    // Fell behind: everything is read again.
                    Ok(Event::Missed) | Err(RecvError::Lagged(_)) => Err("events were missed".to_owned()),
                    Err(RecvError::Closed) => return,
                };
                if let Err(failure) = done {
                    tracing::warn!(channel = name, failure, "a question could not be shown; trying again");
                    caught_up = false;
                }
            }
            (source, delivered) = &mut reading => {
                let wait = match delivered {
                    Ok(items) => {
                        backoff.reset();
                        for item in items {
                            if let Err(failure) = work.take(item).await {
                                tracing::warn!(channel = name, failure, "what came could not be handled in full");
                                caught_up = false;
                            }
                        }
                        work.taken().await;
                        Duration::ZERO
                    }
                    Err(failure) => {
                        let wait = backoff.failed();
                        tracing::warn!(channel = name, failure, ?wait, "the service cannot be reached; trying again");
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

/// Every waiting question shown here shown in full, and every one shown
/// that left said so.
async fn catch_up<W: Work>(work: &mut W) -> Result<(), String> {
    let mut waiting = work.desk().waiting().await.map_err(|e| e.to_string())?;
    waiting.retain(|record| work.shows(record));
    for id in work.shown() {
        if !waiting.iter().any(|record| record.id == id) {
            work.left(&id).await?;
        }
    }
    for record in &waiting {
        show(work, record).await?;
    }
    Ok(())
}

/// Shows `record`; one the service refuses for good is passed over, said
/// in the log, so that one question never holds up the others (the page
/// and the other channels still show it).
async fn show<W: Work>(work: &mut W, record: &Record) -> Result<(), String> {
    match work.post(record).await {
        Ok(()) => Ok(()),
        Err(Failure::Refused(why)) => {
            tracing::warn!(
                channel = work.name(),
                id = record.id,
                why,
                "the service refused to show a question; it is not shown there (the page \
                 and the other channels show it)"
            );
            Ok(())
        }
        Err(Failure::Down(why)) => Err(why),
    }
}

/// Question `id` was asked or left: shown, or said to have left.
async fn refresh<W: Work>(work: &mut W, id: &str) -> Result<(), String> {
    match work.desk().get(id.to_owned()).await {
        Ok(Some(record)) if record.state == State::Waiting && work.shows(&record) => {
            show(work, &record).await
        }
        Ok(_) => work.left(id).await,
        Err(error) => Err(error.to_string()),
    }
}

/// Question `id` as it is, while it waits; one that left is said so
/// (`work.left`), and is `None`.
pub async fn still_waiting<W: Work>(work: &mut W, id: &str) -> Result<Option<Record>, String> {
    match work.desk().get(id.to_owned()).await {
        Ok(Some(record)) if record.state == State::Waiting => Ok(Some(record)),
        Ok(_) => work.left(id).await.map(|()| None),
        Err(error) => Err(error.to_string()),
    }
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

    /// What was kept, reading again (after a backoff) while the store
    /// cannot be read.
    pub async fn load_surely<T: DeserializeOwned + Default>(&self, desk: &dyn Desk) -> T {
        let mut backoff = Backoff::new();
        loop {
            match self.load(desk).await {
                Ok(state) => return state,
                Err(error) => {
                    let wait = backoff.failed();
                    tracing::warn!(channel = self.name, %error, ?wait, "what a channel kept cannot be read; trying again");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Keeps `state`.
    pub async fn save<T: Serialize>(&self, desk: &dyn Desk, state: &T) -> Result<(), StoreError> {
        let text = serde_json::to_string(state).map_err(StoreError::backend)?;
        desk.keep(self.name, text).await
    }
}

/// A button of a channel's: what it does, to which batch (by the key the
/// channel posted it under) and question. Its data is opaque (`c12.0.3`:
/// choose option 3 of question 0 of batch 12), never an answer: a client
/// can send any data for a button, so each press is checked against what
/// the channel posted.
#[derive(Debug, PartialEq)]
pub enum Press {
    Choose {
        key: u64,
        question: usize,
        option: usize,
    },
    Toggle {
        key: u64,
        question: usize,
        option: usize,
    },
    Send {
        key: u64,
        question: usize,
    },
    OwnWords {
        key: u64,
        question: usize,
    },
    Skip {
        key: u64,
        question: usize,
    },
}

impl Press {
    /// The last buttons under question `question` of `record` (posted under
    /// `key`), with their labels: own words and Skip, where it takes them.
    pub fn closing(record: &Record, key: u64, question: usize) -> Vec<(String, Press)> {
        let asked = &record.request.questions[question];
        let mut presses = Vec::new();
        if asked.own_words().allowed() {
            presses.push((
                "✍ Type your own answer".to_owned(),
                Press::OwnWords { key, question },
            ));
        }
        if !asked.is_required() {
            presses.push(("Skip".to_owned(), Press::Skip { key, question }));
        }
        presses
    }

    /// The button's data: at most 21 bytes, far from Telegram's 64.
    pub fn data(&self) -> String {
        match *self {
            Press::Choose {
                key,
                question,
                option,
            } => format!("c{key}.{question}.{option}"),
            Press::Toggle {
                key,
                question,
                option,
            } => format!("t{key}.{question}.{option}"),
            Press::Send { key, question } => format!("s{key}.{question}"),
            Press::OwnWords { key, question } => format!("o{key}.{question}"),
            Press::Skip { key, question } => format!("k{key}.{question}"),
        }
    }

    /// Reads a button's data; `None` for anything this channel never made.
    pub fn parse(data: &str) -> Option<Press> {
        let mut chars = data.chars();
        let op = chars.next()?;
        let numbers: Vec<u64> = chars
            .as_str()
            .split('.')
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let index = |n: u64| usize::try_from(n).ok();
        Some(match (op, numbers.as_slice()) {
            ('c', &[key, q, o]) => Press::Choose {
                key,
                question: index(q)?,
                option: index(o)?,
            },
            ('t', &[key, q, o]) => Press::Toggle {
                key,
                question: index(q)?,
                option: index(o)?,
            },
            ('s', &[key, q]) => Press::Send {
                key,
                question: index(q)?,
            },
            ('o', &[key, q]) => Press::OwnWords {
                key,
                question: index(q)?,
            },
            ('k', &[key, q]) => Press::Skip {
                key,
                question: index(q)?,
            },
            _ => return None,
        })
    }

    pub fn key(&self) -> u64 {
        match *self {
            Press::Choose { key, .. }
            | Press::Toggle { key, .. }
            | Press::Send { key, .. }
            | Press::OwnWords { key, .. }
            | Press::Skip { key, .. } => key,
        }
    }

    pub fn question(&self) -> usize {
        match *self {
            Press::Choose { question, .. }
            | Press::Toggle { question, .. }
            | Press::Send { question, .. }
            | Press::OwnWords { question, .. }
            | Press::Skip { question, .. } => question,
        }
    }
}

/// What a channel collects of a batch it showed: each question's answer
/// given there, and the options ticked of each multi-select question.
#[derive(Debug, Serialize, Deserialize)]
pub struct Batch {
    /// The inbox's question id.
    pub id: String,
    answers: Vec<Option<Answer>>,
    chosen: Vec<BTreeSet<usize>>,
}

/// What became of an answer given to one question of a batch.
#[derive(Debug, PartialEq)]
pub enum Given {
    /// Kept; this many questions of the batch are still to be answered.
    Noted(usize),
    /// The batch is answered.
    Answered,
    /// It counts for nothing, saying why.
    Refused(String),
}

impl Given {
    /// What to tell whoever gave it.
    pub fn told(&self) -> String {
        match self {
            Given::Noted(left) => format!("Noted; {left} more to answer before it is sent."),
            Given::Answered => "Answered.".to_owned(),
            Given::Refused(why) => format!("Not answered: {why}"),
        }
    }
}

impl Batch {
    /// Nothing given yet for `record`.
    pub fn new(record: &Record) -> Self {
        let count = record.request.questions.len();
        Batch {
            id: record.id.clone(),
            answers: vec![None; count],
            chosen: vec![BTreeSet::new(); count],
        }
    }

    /// The options ticked of question `question`.
    pub fn chosen(&self, question: usize) -> &BTreeSet<usize> {
        &self.chosen[question]
    }

    /// Ticks option `option` of question `question`, or unticks it.
    pub fn toggle(&mut self, question: usize, option: usize) {
        let chosen = &mut self.chosen[question];
        if !chosen.remove(&option) {
            chosen.insert(option);
        }
    }

    /// The options in `range` ticked of question `question` are those of
    /// `ticked` (a group of checkboxes, as it is now).
    pub fn tick(
        &mut self,
        question: usize,
        range: std::ops::Range<usize>,
        ticked: &BTreeSet<usize>,
    ) {
        let chosen = &mut self.chosen[question];
        chosen.retain(|option| !range.contains(option));
        chosen.extend(
            ticked
                .iter()
                .copied()
                .filter(|option| range.contains(option)),
        );
    }

    /// The labels ticked of question `question` of `record`.
    pub fn ticked(&self, record: &Record, question: usize) -> Vec<String> {
        let options = record.request.questions[question]
            .options
            .as_deref()
            .unwrap_or_default();
        self.chosen[question]
            .iter()
            .filter_map(|&option| options.get(option).map(|o| o.label.clone()))
            .collect()
    }

    /// Whether question `question` has an answer here.
    pub fn has(&self, question: usize) -> bool {
        self.answers.get(question).is_some_and(Option::is_some)
    }

    /// `answer` to question `question` of `record` (this batch's), from
    /// `person` on `channel`: kept, and once every question has one, the
    /// batch is answered through `desk`, by the page's rules. A person
    /// outside the question's audience is refused first.
    pub async fn give(
        &mut self,
        desk: &dyn Desk,
        record: &Record,
        channel: &'static str,
        question: usize,
        answer: Answer,
        person: Option<Person>,
    ) -> Given {
        if person
            .as_ref()
            .is_some_and(|person| !record.answerable_by(&person.groups))
        {
            return Given::Refused("this question is for another group of the team.".to_owned());
        }
        // What the question does not take (a field of another server's
        // form) is refused at once, saying why, and not kept.
        if let Some(problem) = record
            .request
            .questions
            .get(question)
            .and_then(|asked| asked.refuses(&answer))
        {
            return Given::Refused(format!("{problem}."));
        }
        self.answers[question] = Some(answer);
        let Some(answers) = self.answers.iter().cloned().collect::<Option<Vec<_>>>() else {
            return Given::Noted(self.answers.iter().filter(|a| a.is_none()).count());
        };
        match desk.answer(self.id.clone(), answers, channel, person).await {
            Ok(()) => Given::Answered,
            Err(Unsettled::NotPending) => {
                Given::Refused("it was answered elsewhere or withdrawn.".to_owned())
            }
            Err(Unsettled::Misfit(error)) => {
                self.answers[question] = None;
                Given::Refused(error.message().to_owned())
            }
            Err(Unsettled::Unrecorded(why)) => {
                tracing::warn!(channel, why, "an answer could not be recorded");
                self.answers[question] = None;
                Given::Refused("the inbox could not record it; try again.".to_owned())
            }
        }
    }
}

/// Where a channel's secret is: `{key}_env = "VARIABLE"` or `{key}_file =
/// "/absolute/path"` (mode 0600), one of them, never the secret itself;
/// `None` when neither is given. It is read when the inbox starts.
pub fn secret_from(
    key: &str,
    env: Option<String>,
    file: Option<std::path::PathBuf>,
) -> Result<Option<TokenSource>, String> {
    match (env, file) {
        (None, None) => Ok(None),
        (Some(name), None) => Ok(Some(TokenSource::Env(name))),
        (None, Some(path)) if path.is_absolute() => Ok(Some(TokenSource::File(path))),
        (None, Some(path)) => Err(format!(
            "{key}_file {} must be an absolute path",
            path.display()
        )),
        (Some(_), Some(_)) => Err(format!("give {key}_env or {key}_file, not both")),
    }
}

/// Text that must never be shown: its `Debug` says so and no more.
#[derive(Clone)]
pub struct Secret(pub String);

impl Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(secret)")
    }
}

/// Who answers on `channel`: in one user's inbox, `themselves`; in a
/// team's, the person `people` names them (`them`, as the service says),
/// while their token holds. Else, why not.
pub async fn person(
    desk: &dyn Desk,
    channel: &str,
    people: Option<&String>,
    them: &str,
    themselves: impl FnOnce() -> Person,
) -> Result<Person, String> {
    if !desk.team() {
        return Ok(themselves());
    }
    let Some(name) = people else {
        return Err(format!(
            "{them} is not one of this team's people ([inbox.channels.{channel}] people)."
        ));
    };
    match desk.person(name.clone()).await {
        Ok(Some(person)) => Ok(person),
        Ok(None) => Err(format!(
            "{name} is not a person of this team, or their token was revoked."
        )),
        Err(error) => {
            tracing::warn!(channel, %error, "who answers could not be read");
            Err("the inbox could not check who you are; try again.".to_owned())
        }
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

/// Where a piece of the model's words cut short goes on.
pub const CONTINUED: &str = "…(continued on the page)";

/// Words from the model, an agent or a person, as a channel shows them:
/// no control characters but newlines ([`ask_user_seam::text::clean`]),
/// cut to `most` characters, saying where the rest is ([`CONTINUED`]).
pub fn words(text: &str, most: usize) -> String {
    cut(&ask_user_seam::text::clean(text, true), most, CONTINUED)
}

/// As [`words`], for a button's label: cut with "…".
pub fn short(text: &str, most: usize) -> String {
    cut(&ask_user_seam::text::clean(text, false), most, "…")
}

fn cut(text: &str, most: usize, tail: &str) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}{tail}", &text[..at]),
        None => text.to_owned(),
    }
}

/// `text` with `&`, `<` and `>` escaped: all that Telegram's HTML and
/// Slack's mrkdwn read as markup (a tag, a link, a mention such as
/// `<!channel>`), so that the model's words stay text.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
    fn a_buttons_data_is_read_back_and_nothing_else_is() {
        for press in [
            Press::Choose {
                key: u64::MAX,
                question: 15,
                option: 31,
            },
            Press::Toggle {
                key: 3,
                question: 0,
                option: 2,
            },
            Press::Send {
                key: 3,
                question: 1,
            },
            Press::OwnWords {
                key: 0,
                question: 0,
            },
            Press::Skip {
                key: 7,
                question: 2,
            },
        ] {
            let data = press.data();
            assert!(data.len() <= 64, "{data}");
            assert_eq!(Press::parse(&data), Some(press));
        }
        for forged in [
            "", "x1.2", "c1.2", "c1.2.3.4", "c-1.0.0", "s1.a", "k1", "c1..0",
        ] {
            assert_eq!(Press::parse(forged), None, "{forged}");
        }
    }

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
