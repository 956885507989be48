//! `[inbox.channels.telegram]`: every question in a Telegram chat, answered
//! there, through a bot of the user's, over the Bot API's long polling
//! (`getUpdates`: the inbox opens the connection; no webhook, no port, no
//! public address).
//!
//! ```toml
//! [inbox.channels.telegram]
//! token_env = "ASK_USER_TELEGRAM_TOKEN"  # or token_file = "/abs/path" (mode 0600)
//! chat = 123456789                       # where questions are posted
//! allow = [123456789]                    # who may answer: required
//! api_url = "https://api.telegram.org"   # the default
//! ```
//!
//! One message per question of a batch: its header, question, detail and
//! options (HTML, everything the model wrote escaped), with a keyboard: a
//! button per option; for a multi-select question, buttons that toggle a ✓
//! and a Send; "Type your own answer" (the reply to the bot's prompt is the
//! own words); Skip. A batch is answered once each of its questions is, by
//! the page's rules; every message then says what became of it, wherever it
//! was answered, dismissed, withdrawn or expired, and loses its keyboard.
//!
//! A button carries an opaque key the inbox maps (`c12.0.3`: choose option
//! 3 of question 0 of the batch posted under key 12), never an answer: a
//! client can send any data for a button, so every press is checked (the
//! person allowed, the chat, the message, the option). Only the people in
//! `allow` (Telegram user ids) answer; anyone can message a bot, so a
//! channel without the list is refused at start-up. The token reaches no
//! log, no error and no process argument (the Bot API wants it in the
//! address it is called at; that address is never shown).
//!
//! The update offset, the questions posted and the answers given so far
//! are kept in `telegram.json` in the state directory and written before
//! the next updates are asked for: a restart neither loses an answer nor
//! takes one twice (an update taken again settles nothing twice: the first
//! answer wins).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use ask_user_seam::Answer;

use super::chat::{self, Posted, Said};
use super::two_way::{
    self, Backoff, Desk, Failure, Given, Kept, Press, Secret, TwoWay, escape, short, words,
};
use super::{ChannelKind, Configured};
use crate::answerer::TokenSource;
use crate::store::{BoxFuture, Person, Record};

/// The Bot API's own address.
const DEFAULT_API: &str = "https://api.telegram.org";

/// How long one `getUpdates` waits for an update.
const POLL: Duration = Duration::from_secs(30);

/// The most updates one `getUpdates` brings (Telegram's default is 100):
/// their reply stays well within [`super::MAX_REPLY_BYTES`].
const UPDATES_PER_POLL: usize = 20;

/// How long any other call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest `retry_after` obeyed, and how many times a call is tried
/// again after a 429.
const MOST_RETRY_AFTER: Duration = Duration::from_secs(60);
const RETRIES: usize = 5;

/// A message's text may have 4096 characters; the model's words are cut
/// well within it.
const MAX_MESSAGE_CHARS: usize = 3900;

pub(super) struct Telegram;

/// `[inbox.channels.telegram]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    chat: Option<i64>,
    allow: Option<Vec<i64>>,
    api_url: Option<String>,
    people: Option<BTreeMap<String, String>>,
    groups: Option<Vec<String>>,
}

impl ChannelKind for Telegram {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn configure(&self, value: &toml::Value) -> Result<Configured, String> {
        let table: Table = value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.message().to_owned())?;
        let chat = table.chat.ok_or(
            "needs chat = <the chat's id>, where the questions are posted (message the bot, then \
             open getUpdates as the docs say to read it)",
        )?;
        let allow = table.allow.filter(|allow| !allow.is_empty()).ok_or(
            "needs allow = [<Telegram user id>, …], the people who may answer: anyone can \
             message a bot, so nobody answers unless listed",
        )?;
        let token = two_way::secret_from("token", table.token_env, table.token_file)?.ok_or(
            "needs the bot's token from token_env = \"VARIABLE\" or token_file = \"/path\" (one \
             of them; never inline)",
        )?;
        let api_url = table.api_url.unwrap_or_else(|| DEFAULT_API.to_owned());
        if !api_url.starts_with("https://") && !api_url.starts_with("http://") {
            return Err(format!(
                "api_url {api_url} is not an http:// or https:// URL"
            ));
        }
        let people = table
            .people
            .unwrap_or_default()
            .into_iter()
            .map(|(id, name)| match id.parse::<i64>() {
                Ok(id) => Ok((id, name)),
                Err(_) => Err(format!(
                    "people: {id:?} is not a Telegram user id (a number, quoted: \"123456789\" = \"ana\")"
                )),
            })
            .collect::<Result<_, _>>()?;
        Ok(Configured::TwoWay(Arc::new(TelegramChannel {
            people,
            groups: table.groups.unwrap_or_default(),
            token,
            api_url: api_url.trim_end_matches('/').to_owned(),
            chat,
            allow,
        })))
    }
}

/// Whether `token` has a bot token's shape: nothing in it can change the
/// address it is put in.
fn bot_token(token: &str) -> bool {
    token.split_once(':').is_some_and(|(bot, secret)| {
        !bot.is_empty()
            && bot.bytes().all(|b| b.is_ascii_digit())
            && !secret.is_empty()
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

#[derive(Debug)]
struct TelegramChannel {
    /// The bot's token, read when the inbox starts.
    token: TokenSource,
    /// The Bot API's address.
    api_url: String,
    chat: i64,
    allow: Vec<i64>,
    /// In a team's inbox, who each Telegram user is: a person's name (their
    /// token's).
    people: BTreeMap<i64, String>,
    /// In a team's inbox, the audiences whose questions the chat shows (no
    /// audience: those for anyone).
    groups: Vec<String>,
}

impl TelegramChannel {
    /// The bot's token, read now and checked for its shape.
    fn token(&self) -> Result<String, String> {
        let token = self
            .token
            .read("the Telegram bot token")
            .map_err(|e| e.to_string())?;
        match bot_token(&token) {
            true => Ok(token),
            false => Err(
                "the Telegram bot token does not look like one (digits, a colon, then letters, \
                 digits, - and _), as @BotFather gives it"
                    .to_owned(),
            ),
        }
    }

    /// The Bot API, with the bot's token read now.
    fn api(&self) -> Result<Api, String> {
        let token = self.token()?;
        Ok(Api {
            base: Secret(format!("{}/bot{token}", self.api_url)),
            http: crate::http_client(None).map_err(|e| e.to_string())?,
        })
    }
}

/// The Bot API at `base` (its address with the token).
#[derive(Debug, Clone)]
struct Api {
    base: Secret,
    http: reqwest::Client,
}

/// The Bot API's reply.
#[derive(Deserialize)]
struct Reply<T> {
    ok: bool,
    result: Option<T>,
    error_code: Option<u16>,
    description: Option<String>,
    parameters: Option<ReplyParameters>,
}

#[derive(Deserialize)]
struct ReplyParameters {
    retry_after: Option<u64>,
}

impl Api {
    /// Calls `method` with `body`, waiting as long as a 429 says (a few
    /// times).
    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<T, Failure> {
        let mut retries = 0;
        loop {
            let response = self
                .http
                .post(format!("{}/{method}", self.base.0))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string())
                .timeout(timeout)
                .send()
                .await
                // The address holds the token: the error is told without it.
                .map_err(|e| Failure::Down(format!("{method}: {}", e.without_url())))?;
            let status = response.status();
            let read = super::reply_body(response).await;
            let reply: Reply<T> = match read.as_deref().map(serde_json::from_slice) {
                Ok(Ok(reply)) => reply,
                Err(why) => {
                    return Err(Failure::Down(format!(
                        "{method}: the Bot API replied {status}: {why}"
                    )));
                }
                Ok(Err(_)) if status.is_server_error() || status.is_success() => {
                    return Err(Failure::Down(format!(
                        "{method}: the Bot API replied {status}"
                    )));
                }
                Ok(Err(_)) => {
                    return Err(Failure::Refused(format!(
                        "{method}: the Bot API replied {status}"
                    )));
                }
            };
            let description = reply.description.unwrap_or_default();
            match (reply.ok, reply.result, reply.error_code) {
                (true, Some(result), _) => return Ok(result),
                (true, None, _) => {
                    return Err(Failure::Down(format!("{method}: a reply with no result")));
                }
                (false, _, Some(429)) if retries < RETRIES => {
                    retries += 1;
                    let wait = reply
                        .parameters
                        .and_then(|p| p.retry_after)
                        .map_or(Duration::from_secs(1), Duration::from_secs)
                        .min(MOST_RETRY_AFTER);
                    tracing::info!(method, ?wait, "the Bot API asks to wait (429)");
                    tokio::time::sleep(wait).await;
                }
                (false, _, Some(code)) if code == 429 || code >= 500 => {
                    return Err(Failure::Down(format!("{method}: {code} {description}")));
                }
                (false, _, code) => {
                    return Err(Failure::Refused(format!(
                        "{method}: {} {description}",
                        code.unwrap_or(status.as_u16())
                    )));
                }
            }
        }
    }

    /// The updates from `offset` on, waiting up to [`POLL`] for one.
    async fn updates(self, offset: i64) -> Result<Vec<Update>, Failure> {
        let body = json!({
            "offset": offset,
            "limit": UPDATES_PER_POLL,
            "timeout": POLL.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        let updates: Vec<Value> = self.call("getUpdates", &body, POLL + CALL_TIMEOUT).await?;
        // One update that cannot be read (a field missing, another shape)
        // is passed over, logged, and read past: it never holds up the
        // rest.
        Ok(updates
            .into_iter()
            .filter_map(|update| {
                let id = update["update_id"].as_i64();
                serde_json::from_value(update)
                    .inspect_err(|error| {
                        tracing::warn!(update_id = ?id, %error, "telegram: an update that cannot be read is passed over");
                    })
                    .ok()
                    .or(id.map(Update::unread))
            })
            .collect())
    }
}

/// What `getUpdates` gives: a message or a button pressed (other kinds are
/// not asked for).
#[derive(Debug, Deserialize)]
struct Update {
    update_id: i64,
    message: Option<Message>,
    callback_query: Option<CallbackQuery>,
}

impl Update {
    /// An update that could not be read: nothing to do, but its id, to
    /// read past it.
    fn unread(update_id: i64) -> Self {
        Update {
            update_id,
            message: None,
            callback_query: None,
        }
    }
}

#[derive(Debug, Deserialize)]
struct Message {
    message_id: i64,
    from: Option<User>,
    chat: Chat,
    text: Option<String>,
    reply_to_message: Option<Box<Message>>,
}

#[derive(Debug, Deserialize)]
struct Chat {
    id: i64,
}

#[derive(Debug, Deserialize)]
struct User {
    id: i64,
    #[serde(default)]
    first_name: String,
    username: Option<String>,
}

impl User {
    /// As the inbox names who answered.
    fn name(&self) -> String {
        match &self.username {
            Some(username) => format!("@{username}"),
            None if !self.first_name.is_empty() => self.first_name.clone(),
            None => format!("Telegram user {}", self.id),
        }
    }
}

#[derive(Debug, Deserialize)]
struct CallbackQuery {
    id: String,
    from: User,
    message: Option<Message>,
    data: Option<String>,
}

/// What the channel keeps across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// The next update to ask for: every one before it was handled.
    offset: i64,
    /// The key the next question posted gets.
    next_key: u64,
    /// The questions posted and still waiting, by key.
    posted: BTreeMap<u64, Posted<i64>>,
    /// The prompts for own words: the prompt's message, and the batch
    /// (its key) and question it asks for.
    prompts: BTreeMap<i64, (u64, usize)>,
}

/// The bot's updates, from `offset` on: once a delivery was taken (and
/// kept), the next poll asks past it, which confirms it to Telegram.
struct Poller {
    api: Api,
    offset: i64,
}

impl two_way::Source for Poller {
    type Item = Update;

    async fn next(mut self) -> (Self, Result<Vec<Update>, String>) {
        let updates = self.api.clone().updates(self.offset).await;
        if let Ok(updates) = &updates
            && let Some(last) = updates.iter().map(|u| u.update_id).max()
        {
            self.offset = self.offset.max(last + 1);
        }
        (self, updates.map_err(|failure| failure.to_string()))
    }
}

impl two_way::Work for Run<'_> {
    type Item = Update;

    fn name(&self) -> &'static str {
        "telegram"
    }

    fn desk(&self) -> &dyn Desk {
        self.desk
    }

    fn shows(&self, record: &Record) -> bool {
        crate::store::answerable(&record.audience, &self.channel.groups)
    }

    fn shown(&self) -> Vec<String> {
        chat::shown(self)
    }

    async fn post(&mut self, record: &Record) -> Result<(), Failure> {
        chat::post(self, record).await
    }

    async fn left(&mut self, id: &str) -> Result<(), String> {
        chat::left(self, id).await
    }

    async fn take(&mut self, update: Update) -> Result<(), String> {
        self.state.offset = self.state.offset.max(update.update_id + 1);
        self.handle(update).await.map_err(|f| f.to_string())
    }

    /// Kept before the next poll confirms them.
    async fn taken(&mut self) {
        // A prompt of a batch that left asks for nothing.
        let posted = &self.state.posted;
        self.state
            .prompts
            .retain(|_, (key, _)| posted.contains_key(key));
        self.save_surely().await;
    }
}

impl chat::Chat for Run<'_> {
    type Message = i64;

    fn posted(&self) -> &BTreeMap<u64, Posted<i64>> {
        &self.state.posted
    }

    fn parts(&mut self) -> (&mut BTreeMap<u64, Posted<i64>>, &dyn Desk) {
        (&mut self.state.posted, self.desk)
    }

    fn new_key(&mut self) -> u64 {
        self.state.next_key += 1;
        self.state.next_key - 1
    }

    async fn send(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        chosen: &BTreeSet<usize>,
    ) -> Result<i64, Failure> {
        let body = json!({
            "chat_id": self.channel.chat,
            "text": text(record, question, None),
            "parse_mode": "HTML",
            "reply_markup": keyboard(record, key, question, chosen),
        });
        let sent: SentMessage = self.api.call("sendMessage", &body, CALL_TIMEOUT).await?;
        Ok(sent.message_id)
    }

    async fn show(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        message: &i64,
        chosen: &BTreeSet<usize>,
        said: Said<'_>,
    ) -> Result<(), Failure> {
        let mut body = json!({
            "chat_id": self.channel.chat,
            "message_id": message,
            "parse_mode": "HTML",
        });
        let footer = match said {
            Said::Given { answer, told } => {
                body["reply_markup"] = keyboard(record, key, question, chosen);
                format!(
                    "<b>Your answer:</b> {} · {}",
                    escape(&words(answer, 500)),
                    escape(told)
                )
            }
            Said::Left { outcome, answer } => {
                let answer = answer.map(|a| format!(": {}", escape(&words(a, 500))));
                format!(
                    "<b>{}</b>{}",
                    escape(&words(outcome, 300)),
                    answer.unwrap_or_default()
                )
            }
        };
        body["text"] = text(record, question, Some(&footer)).into();
        // Edited, the reply is the message (or `true`): nothing to read.
        self.api
            .call::<Value>("editMessageText", &body, CALL_TIMEOUT)
            .await
            .map(drop)
    }

    async fn keep(&self) {
        self.save().await;
    }
}

impl TwoWay for TelegramChannel {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn check(&self) -> Result<(), String> {
        self.token().map(drop)
    }

    fn run(self: Arc<Self>, desk: Arc<dyn Desk>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let api = match self.api() {
                Ok(api) => api,
                Err(why) => return tracing::error!(why, "telegram: the channel cannot start"),
            };
            let mut events = desk.events();
            let kept = Kept::new("telegram");
            let state: State = kept.load_surely(&*desk).await;
            let poller = Poller {
                api: api.clone(),
                offset: state.offset,
            };
            let mut run = Run {
                channel: &self,
                api,
                desk: &*desk,
                state,
                kept,
            };
            two_way::serve(&mut run, poller, &mut events).await;
        })
    }
}

/// The channel at work.
struct Run<'a> {
    channel: &'a TelegramChannel,
    api: Api,
    desk: &'a dyn Desk,
    state: State,
    kept: Kept,
}

impl Run<'_> {
    /// Keeps the state; a store that fails is logged (what it kept is
    /// read at the next start).
    async fn save(&self) {
        if let Err(error) = self.kept.save(self.desk, &self.state).await {
            tracing::warn!(%error, "telegram: its state could not be kept");
        }
    }

    /// Keeps the state, trying again until the store takes it: the updates
    /// handled are confirmed only once it is kept.
    async fn save_surely(&self) {
        let mut backoff = Backoff::new();
        while let Err(error) = self.kept.save(self.desk, &self.state).await {
            let wait = backoff.failed();
            tracing::warn!(%error, ?wait, "telegram: its state could not be kept; trying again");
            tokio::time::sleep(wait).await;
        }
    }

    async fn handle(&mut self, update: Update) -> Result<(), Failure> {
        if let Some(query) = update.callback_query {
            return self.pressed(query).await;
        }
        if let Some(message) = update.message {
            return self.replied(message).await;
        }
        Ok(())
    }

    /// A button was pressed.
    async fn pressed(&mut self, query: CallbackQuery) -> Result<(), Failure> {
        if !self.channel.allow.contains(&query.from.id) {
            tracing::info!(
                user = query.from.id,
                "telegram: a button was pressed by someone not in allow; refused"
            );
            return self
                .tell(
                    &query.id,
                    &format!(
                        "You may not answer these questions: your Telegram id, {}, is not in \
                         this inbox's allow list.",
                        query.from.id
                    ),
                    true,
                )
                .await;
        }
        let message = query
            .message
            .as_ref()
            .filter(|message| message.chat.id == self.channel.chat);
        let press = query.data.as_deref().and_then(Press::parse);
        let found = press.as_ref().zip(message).and_then(|(press, message)| {
            let posted = self.state.posted.get(&press.key())?;
            (posted.messages.get(press.question()) == Some(&message.message_id)).then_some(press)
        });
        let Some(press) = found else {
            return self
                .tell(&query.id, "This question is no longer waiting.", false)
                .await;
        };
        let (key, question) = (press.key(), press.question());
        let Some(record) = chat::waiting(self, key).await? else {
            return self
                .tell(&query.id, "This question is no longer waiting.", false)
                .await;
        };
        let Some(asked) = record.request.questions.get(question) else {
            return self.tell(&query.id, "No such question.", false).await;
        };
        let labels: Vec<&str> = asked
            .options
            .iter()
            .flatten()
            .map(|o| o.label.as_str())
            .collect();
        let label = |option: usize| labels.get(option).map(|l| (*l).to_owned());
        let posted = self.state.posted.get_mut(&key).expect("found above");
        let answer = match *press {
            Press::Choose { option, .. } => match label(option) {
                Some(label) => Answer {
                    id: asked.id.clone(),
                    selected: vec![label],
                    custom: None,
                },
                None => return self.tell(&query.id, "No such option.", false).await,
            },
            Press::Toggle { option, .. } => {
                if label(option).is_none() {
                    return self.tell(&query.id, "No such option.", false).await;
                }
                posted.batch.toggle(question, option);
                let body = json!({
                    "chat_id": self.channel.chat,
                    "message_id": posted.messages[question],
                    "reply_markup": keyboard(&record, key, question, posted.batch.chosen(question)),
                });
                let marked = self
                    .api
                    .call::<Value>("editMessageReplyMarkup", &body, CALL_TIMEOUT)
                    .await;
                self.tell(&query.id, "", false).await?;
                return marked.map(drop).or_else(two_way::refused_is_done);
            }
            Press::Send { .. } => Answer {
                id: asked.id.clone(),
                selected: posted.batch.ticked(&record, question),
                custom: None,
            },
            Press::Skip { .. } => Answer::skipped(asked.id.clone()),
            Press::OwnWords { .. } => {
                let body = json!({
                    "chat_id": self.channel.chat,
                    "text": format!(
                        "✍ Reply to this message with your answer to: {}",
                        escape(&words(&asked.question, 200))
                    ),
                    "parse_mode": "HTML",
                    "reply_parameters": {"message_id": posted.messages[question]},
                    "reply_markup": {"force_reply": true, "input_field_placeholder": "Your answer"},
                });
                let prompt: SentMessage = self.api.call("sendMessage", &body, CALL_TIMEOUT).await?;
                self.state
                    .prompts
                    .insert(prompt.message_id, (key, question));
                return self
                    .tell(&query.id, "Type your answer as a reply.", false)
                    .await;
            }
        };
        let given = self
            .answered(&record, key, question, answer, &query.from)
            .await;
        // An alert (a modal to dismiss) only for an answer that was not taken.
        let alert = matches!(given, Given::Refused(_));
        self.tell(&query.id, &given.told(), alert).await
    }

    /// A message: the reply to a prompt for own words is that answer;
    /// anything else is passed over.
    async fn replied(&mut self, message: Message) -> Result<(), Failure> {
        let (Some(from), Some(text), Some(to)) =
            (&message.from, &message.text, &message.reply_to_message)
        else {
            return Ok(());
        };
        if message.chat.id != self.channel.chat {
            return Ok(());
        }
        let Some(&(key, question)) = self.state.prompts.get(&to.message_id) else {
            return Ok(());
        };
        if !self.channel.allow.contains(&from.id) {
            tracing::info!(
                user = from.id,
                "telegram: own words from someone not in allow; passed over"
            );
            return Ok(());
        }
        let Some(record) = chat::waiting(self, key).await? else {
            return Ok(());
        };
        let Some(asked) = record.request.questions.get(question) else {
            return Ok(());
        };
        self.state.prompts.remove(&to.message_id);
        // Own words add to a multi-select question's ticks, and replace a
        // single choice.
        let selected = match asked.multi_select.unwrap_or(false) {
            true => self.state.posted[&key].batch.ticked(&record, question),
            false => Vec::new(),
        };
        let answer = Answer {
            id: asked.id.clone(),
            selected,
            custom: Some(text.clone()),
        };
        let told = self
            .answered(&record, key, question, answer, from)
            .await
            .told();
        let body = json!({
            "chat_id": self.channel.chat,
            "text": escape(&told),
            "parse_mode": "HTML",
            "reply_parameters": {"message_id": message.message_id},
        });
        self.api
            .call::<Value>("sendMessage", &body, CALL_TIMEOUT)
            .await
            .map(drop)
            .or_else(two_way::refused_is_done)
    }

    /// Question `question` of `record`, the batch under `key`, has
    /// `answer` from `from` ([`chat::give`], once they are known to be
    /// someone who may answer). What to tell them.
    async fn answered(
        &mut self,
        record: &Record,
        key: u64,
        question: usize,
        answer: Answer,
        from: &User,
    ) -> Given {
        // Checked first: nobody else's answer counts, even in part.
        let person = two_way::person(
            self.desk,
            "telegram",
            self.channel.people.get(&from.id),
            &format!("your Telegram id, {},", from.id),
            || Person {
                name: from.name(),
                groups: Vec::new(),
            },
        )
        .await;
        match person {
            Ok(person) => chat::give(self, record, key, question, answer, person).await,
            Err(why) => Given::Refused(why),
        }
    }

    /// Answers a button press (its spinner stops), with `text` as a toast,
    /// or an alert.
    async fn tell(&self, query: &str, text: &str, alert: bool) -> Result<(), Failure> {
        // The Bot API takes at most 200 characters.
        let text: String = text.chars().take(200).collect();
        let body = json!({"callback_query_id": query, "text": text, "show_alert": alert});
        self.api
            .call::<Value>("answerCallbackQuery", &body, CALL_TIMEOUT)
            .await
            .map(drop)
            // Too old to answer (after a restart): nothing to stop.
            .or_else(two_way::refused_is_done)
    }
}

#[derive(Deserialize)]
struct SentMessage {
    message_id: i64,
}

/// The message of question `question` of `record` (HTML), and `footer`
/// (HTML already) under it. The model's words are escaped, and cut to fit
/// a message.
fn text(record: &Record, question: usize, footer: Option<&str>) -> String {
    let questions = &record.request.questions;
    let asked = &questions[question];
    let mut head = String::new();
    if let Some(header) = &asked.header {
        head.push_str(&format!("<b>{}</b>", escape(&words(header, 64))));
    }
    if questions.len() > 1 {
        if !head.is_empty() {
            head.push_str(" · ");
        }
        head.push_str(&format!("question {} of {}", question + 1, questions.len()));
    }
    let mut parts = Vec::new();
    if !head.is_empty() {
        parts.push(head);
    }
    parts.push(escape(&words(&asked.question, 1500)));
    if let Some(detail) = &asked.detail {
        parts.push(format!("<i>{}</i>", escape(&words(detail, 1000))));
    }
    let options = asked.options.as_deref().unwrap_or_default();
    let line = |option: &ask_user_seam::QuestionOption, described: bool| {
        let label = format!("• <b>{}</b>", escape(&words(&option.label, 100)));
        match &option.description {
            Some(description) if described => {
                format!("{label} — {}", escape(&words(description, 200)))
            }
            _ => label,
        }
    };
    let mut footers = vec![format!(
        "<i>{} · session {}</i>",
        escape(&words(&record.agent, 100)),
        escape(&words(&record.session, 100))
    )];
    footers.extend(footer.map(str::to_owned));
    let used = |parts: &[String]| {
        parts
            .iter()
            .chain(&footers)
            .map(|p| p.chars().count() + 2)
            .sum::<usize>()
    };
    // The options as they fit: with their descriptions, else without,
    // else as many as fit (all are on the buttons).
    let room = MAX_MESSAGE_CHARS.saturating_sub(used(&parts));
    let described: Vec<String> = options.iter().map(|o| line(o, true)).collect();
    let mut lines = match described
        .iter()
        .map(|l| l.chars().count() + 1)
        .sum::<usize>()
        <= room
    {
        true => described,
        false => options.iter().map(|o| line(o, false)).collect(),
    };
    let mut length: usize = lines.iter().map(|l| l.chars().count() + 1).sum();
    let mut dropped = 0;
    while length > room.saturating_sub(40) && !lines.is_empty() {
        length -= lines.pop().map_or(0, |l| l.chars().count() + 1);
        dropped += 1;
    }
    if dropped > 0 {
        lines.push(format!("…and {dropped} more (on the buttons)"));
    }
    if !lines.is_empty() {
        parts.push(lines.join("\n"));
    }
    parts.extend(footers);
    parts.join("\n\n")
}
/// The keyboard of question `question` of `record`, posted under `key`,
/// with `chosen` ticked (a multi-select question's).
fn keyboard(record: &Record, key: u64, question: usize, chosen: &BTreeSet<usize>) -> Value {
    let asked = &record.request.questions[question];
    let multi = asked.multi_select.unwrap_or(false);
    let button = |text: String, press: Press| json!({"text": text, "callback_data": press.data()});
    let mut rows: Vec<Value> = asked
        .options
        .iter()
        .flatten()
        .enumerate()
        .map(|(option, o)| {
            let label = short(&o.label, 60);
            json!([match multi {
                true => button(
                    format!(
                        "{} {label}",
                        if chosen.contains(&option) {
                            "☑"
                        } else {
                            "☐"
                        }
                    ),
                    Press::Toggle {
                        key,
                        question,
                        option
                    },
                ),
                false => button(
                    label,
                    Press::Choose {
                        key,
                        question,
                        option
                    }
                ),
            }])
        })
        .collect();
    if multi {
        rows.push(json!([button(
            "Send ✓".into(),
            Press::Send { key, question }
        )]));
    }
    let last: Vec<Value> = Press::closing(record, key, question)
        .into_iter()
        .map(|(label, press)| button(label, press))
        .collect();
    if !last.is_empty() {
        rows.push(last.into());
    }
    json!({"inline_keyboard": rows})
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::{AskRequest, Question, QuestionOption};

    fn record(questions: Vec<Question>) -> Record {
        crate::store::tests::record_of(AskRequest { questions })
    }

    #[test]
    fn a_token_is_a_bot_tokens_shape_or_refused() {
        assert!(bot_token("123456:ABC-def_789"));
        for bad in [
            "", "123456", ":abc", "12a:abc", "1:a/b", "1:a?b", "1:a b", "1:",
        ] {
            assert!(!bot_token(bad), "{bad}");
        }
    }

    #[test]
    fn the_models_words_are_escaped_and_cut_to_fit_a_message() {
        let mut asked = Question::new("q", "<b>Deploy</b> & \u{1b}[2Jgo?");
        asked.header = Some("<i>".into());
        asked.options = Some(
            (0..32)
                .map(|n| {
                    let mut option = QuestionOption::new(format!("{n}{}", "L".repeat(200)));
                    option.description = Some("D".repeat(1000));
                    option
                })
                .collect(),
        );
        let long = Question::new("r", "Q".repeat(4000));
        let record = record(vec![asked, long]);
        let first = text(&record, 0, None);
        assert!(
            first.starts_with(
                "<b>&lt;i&gt;</b> · question 1 of 2\n\n&lt;b&gt;Deploy&lt;/b&gt; &amp; [2Jgo?"
            ),
            "{first}"
        );
        assert!(
            first.chars().count() <= MAX_MESSAGE_CHARS,
            "{}",
            first.chars().count()
        );
        let second = text(&record, 1, Some("<b>Answered</b>"));
        assert!(second.contains(two_way::CONTINUED) && second.ends_with("<b>Answered</b>"));
        assert!(second.chars().count() <= MAX_MESSAGE_CHARS);
        let keys = keyboard(&record, 9, 0, &BTreeSet::new());
        let rows = keys["inline_keyboard"].as_array().unwrap();
        assert_eq!(rows.len(), 33);
        assert_eq!(rows[31][0]["callback_data"], "c9.0.31");
    }
}
