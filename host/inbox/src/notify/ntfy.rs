//! ntfy, in two ways.
//!
//! `ntfy = "https://ntfy.sh/your-topic"` (in `[inbox.notify]`) notifies: the
//! question as plain text (no markdown: ntfy reads none unless asked),
//! control characters dropped, with `Title` and `Click` headers; the page's
//! address without any way in.
//!
//! `[inbox.channels.ntfy]` (a table) is two-way: the question with answer
//! buttons. Each button is an `http` action that posts to a reply topic on
//! the same server, which the inbox subscribes to (its JSON stream, a
//! connection the inbox opens):
//!
//! ```toml
//! [inbox.channels.ntfy]
//! topic = "https://ntfy.sh/ask-3k9x…"   # where the questions go (long, random)
//! replies = "ask-3k9x…-replies"         # the reply topic; default: the topic's name and -replies
//! # token_env = "NTFY_TOKEN"            # an access token, for a server that wants one
//! # person = "alice"                    # who answers, in a team's inbox (a person's token name)
//! ```
//!
//! In a team's inbox the topic gets only the questions its `person` may
//! answer (their groups, read as each is posted): none while it names
//! nobody, or a person whose token was revoked.
//!
//! Whoever reads a topic can post to it, so a button's body carries a MAC
//! (HMAC-SHA-256 with a key of this inbox, kept in its store) over the
//! question, which of its questions, and the choice; the inbox takes only
//! bodies it signed, and each question's first. A batch whose every question
//! is a single choice of at most three options gets a notification per
//! question with a button per option (ntfy shows three at most); any other
//! batch (several choices, more options, own words) gets one notification
//! whose button opens the page, as ntfy has no way to type a reply. When a
//! question leaves, a follow-up says how (ntfy notifications are not edited
//! here).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use ask_user_seam::Answer;

use super::two_way::{
    self, Batch, Desk, Failure, Given, Kept, Secret, TwoWay, answer_line, answers_of, outcome_line,
    short, words,
};
use super::{Channel, ChannelKind, Configured, Note};
use crate::answerer::TokenSource;
use crate::store::{BoxFuture, Person, Record};

pub(super) struct Ntfy;

impl ChannelKind for Ntfy {
    fn name(&self) -> &'static str {
        "ntfy"
    }

    fn configure(&self, value: &toml::Value) -> Result<Configured, String> {
        if !value.is_table() {
            return Ok(Configured::Notifies(Arc::new(NtfyChannel {
                topic: super::url(value).map_err(|why| {
                    format!(
                        "{why} (a topic's URL notifies; a table, [inbox.channels.ntfy], answers)"
                    )
                })?,
            })));
        }
        let table: Table = value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.message().to_owned())?;
        let (server, topic) = table
            .topic
            .rsplit_once('/')
            .filter(|(server, topic)| {
                (server.starts_with("https://") || server.starts_with("http://"))
                    && topic_name(topic)
            })
            .ok_or_else(|| {
                format!(
                    "topic {:?} is not a topic's URL (https://ntfy.sh/<letters, digits, - and _>)",
                    table.topic
                )
            })?;
        let replies = table.replies.unwrap_or_else(|| format!("{topic}-replies"));
        if !topic_name(&replies) || replies == topic {
            return Err(format!(
                "replies {replies:?} must be another topic's name on the same server (letters, \
                 digits, - and _)"
            ));
        }
        let token = two_way::secret_from("token", table.token_env, table.token_file)?;
        Ok(Configured::TwoWay(Arc::new(NtfyAnswers {
            server: server.to_owned(),
            topic: topic.to_owned(),
            replies,
            token,
            person: table.person,
        })))
    }
}

/// A topic's name as ntfy takes it.
fn topic_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[derive(Debug)]
struct NtfyChannel {
    topic: String,
}

impl Channel for NtfyChannel {
    fn name(&self) -> &'static str {
        "ntfy"
    }

    fn send(
        &self,
        note: Arc<Note>,
        http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
        let request = http
            .post(&self.topic)
            .header("Title", "ask-user: an agent is waiting")
            .header("Click", &note.address)
            .header("Tags", "question")
            .body(format!(
                "{}\n{}",
                ask_user_seam::text::clean(&note.text, true),
                note.address
            ));
        Box::pin(async move { super::sent(request).await.map_err(|f| f.to_string()) })
    }
}

/// `[inbox.channels.ntfy]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    topic: String,
    replies: Option<String>,
    token_env: Option<String>,
    token_file: Option<std::path::PathBuf>,
    person: Option<String>,
}

/// The two-way channel.
#[derive(Debug)]
struct NtfyAnswers {
    /// `https://ntfy.sh`.
    server: String,
    topic: String,
    replies: String,
    /// An access token, read when the inbox starts.
    token: Option<TokenSource>,
    /// Who answers, in a team's inbox.
    person: Option<String>,
}

impl NtfyAnswers {
    /// The access token (when there is one) read now, and an HTTP client.
    fn client(&self) -> Result<(Option<Secret>, reqwest::Client), String> {
        let token = self.token()?;
        Ok((token, crate::http_client(None).map_err(|e| e.to_string())?))
    }

    /// The access token, when there is one, read now.
    fn token(&self) -> Result<Option<Secret>, String> {
        self.token
            .as_ref()
            .map(|source| source.read("the ntfy access token").map(Secret))
            .transpose()
            .map_err(|e| e.to_string())
    }
}

/// The most options a question may have for buttons: ntfy shows three
/// actions.
const MOST_BUTTONS: usize = 3;

/// How long the reply stream may stay silent (ntfy sends a keepalive every
/// 45 s) before it is taken for dead and opened again.
const SILENCE: Duration = Duration::from_secs(120);

/// How long a publication may take.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// What the channel keeps across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// The MAC key (hex), made at the first start.
    key: String,
    /// The last reply handled: the stream is read again after it.
    since: Option<String>,
    next_key: u64,
    /// The batches posted and still waiting, by key.
    posted: BTreeMap<u64, Posted>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Posted {
    /// Whether it was posted with buttons (else: a link to the page).
    buttons: bool,
    /// What was answered so far.
    batch: Batch,
}

/// A button's body: which batch, question and option, signed.
#[derive(Debug, Serialize, Deserialize)]
struct Reply {
    k: u64,
    q: usize,
    o: usize,
    m: String,
}

type Sha = Hmac<sha2::Sha256>;

/// The MAC of option `option` of question `question` of inbox question
/// `id`, posted under `key`, with the inbox's `secret`.
fn mac(secret: &str, id: &str, key: u64, question: usize, option: usize) -> Sha {
    let mut mac = Sha::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(format!("ask-user ntfy reply\n{id}\n{key}\n{question}\n{option}").as_bytes());
    mac
}

impl TwoWay for NtfyAnswers {
    fn name(&self) -> &'static str {
        "ntfy"
    }

    fn check(&self) -> Result<(), String> {
        self.token().map(drop)
    }

    fn run(self: Arc<Self>, desk: Arc<dyn Desk>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let (token, http) = match self.client() {
                Ok(client) => client,
                Err(why) => return tracing::error!(why, "ntfy: the channel cannot start"),
            };
            let mut events = desk.events();
            let kept = Kept::new("ntfy");
            let mut state: State = kept.load_surely(&*desk).await;
            if state.key.is_empty() {
                match (
                    ask_user_seam::secret::token(),
                    ask_user_seam::secret::token(),
                ) {
                    (Ok(one), Ok(two)) => state.key = one + &two,
                    (Err(error), _) | (_, Err(error)) => {
                        return tracing::error!(%error, "ntfy: no key can be made; the channel stops");
                    }
                }
            }
            let stream = Stream {
                url: format!("{}/{}/json", self.server, self.replies),
                token: token.as_ref().map(|t| t.0.clone()),
                http: http.clone(),
                response: None,
                line: Vec::new(),
                since: state.since.clone(),
            };
            let mut run = Run {
                channel: &self,
                token,
                http,
                desk: &*desk,
                state,
                kept,
            };
            two_way::serve(&mut run, stream, &mut events).await;
        })
    }
}

struct Run<'a> {
    channel: &'a NtfyAnswers,
    token: Option<Secret>,
    http: reqwest::Client,
    desk: &'a dyn Desk,
    state: State,
    kept: Kept,
}

/// The reply stream: the connection (once open), what was read of its
/// current line, and the last message read.
struct Stream {
    url: String,
    token: Option<String>,
    http: reqwest::Client,
    response: Option<reqwest::Response>,
    line: Vec<u8>,
    since: Option<String>,
}

/// A message of the reply topic.
#[derive(Debug, Deserialize)]
struct Message {
    id: String,
    event: String,
    #[serde(default)]
    message: String,
}

impl two_way::Source for Stream {
    type Item = Message;

    /// The next messages of the reply topic (opening the stream first, after
    /// the last one read); an error when it cannot be opened, ends or falls
    /// silent.
    async fn next(mut self) -> (Self, Result<Vec<Message>, String>) {
        if self.response.is_none() {
            // After the last reply read; at the first start, every reply the
            // server keeps (one sent while the inbox was starting counts; an
            // older one signs for nothing posted now). A message id is
            // letters and digits: nothing to escape.
            let since = self
                .since
                .as_deref()
                .filter(|since| since.bytes().all(|b| b.is_ascii_alphanumeric()))
                .unwrap_or("all");
            let url = format!("{}?since={since}", self.url);
            let mut request = self.http.get(url);
            if let Some(token) = &self.token {
                request = request.bearer_auth(token);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => self.response = Some(response),
                Ok(response) => {
                    let status = response.status();
                    return (
                        self,
                        Err(format!(
                            "the reply topic's stream: the server replied {status}"
                        )),
                    );
                }
                Err(error) => {
                    return (
                        self,
                        Err(format!("the reply topic's stream: {}", error.without_url())),
                    );
                }
            }
        }
        loop {
            let Some(response) = self.response.as_mut() else {
                return (self, Err("the reply topic's stream is closed".to_owned()));
            };
            let read = tokio::time::timeout(SILENCE, response.chunk()).await;
            let chunk = match read {
                Ok(Ok(Some(chunk))) => chunk,
                ended => {
                    let why = match ended {
                        Ok(Err(error)) => {
                            format!("the reply topic's stream: {}", error.without_url())
                        }
                        Err(_) => "the reply topic's stream fell silent".to_owned(),
                        _ => "the reply topic's stream ended".to_owned(),
                    };
                    self.response = None;
                    self.line.clear();
                    return (self, Err(why));
                }
            };
            let mut messages = Vec::new();
            for byte in chunk {
                if byte != b'\n' {
                    // One message is a few hundred bytes; a line past 64 KiB
                    // is no message of ours.
                    if self.line.len() < 64 << 10 {
                        self.line.push(byte);
                    }
                    continue;
                }
                if let Ok(message) = serde_json::from_slice::<Message>(&self.line)
                    && message.event == "message"
                {
                    self.since = Some(message.id.clone());
                    messages.push(message);
                }
                self.line.clear();
            }
            if !messages.is_empty() {
                return (self, Ok(messages));
            }
        }
    }
}

impl two_way::Work for Run<'_> {
    type Item = Message;

    fn name(&self) -> &'static str {
        "ntfy"
    }

    fn desk(&self) -> &dyn Desk {
        self.desk
    }

    /// Every question may be: which reach the topic, [`post`](Self::post)
    /// decides (in a team's inbox, by its person's groups, read then).
    fn shows(&self, _: &Record) -> bool {
        true
    }

    fn shown(&self) -> Vec<String> {
        self.state
            .posted
            .values()
            .map(|p| p.batch.id.clone())
            .collect()
    }

    /// In a team's inbox, only a question its person may answer reaches
    /// the topic (whoever reads the topic sees it): none while nobody is
    /// named, or the person's token is revoked.
    async fn post(&mut self, record: &Record) -> Result<(), Failure> {
        if self.desk.team() {
            let for_them = match self.person().await {
                Some(Some(person)) => record.answerable_by(&person.groups),
                _ => false,
            };
            if !for_them {
                tracing::debug!(
                    id = record.id,
                    "ntfy: a question not for this topic's person is not posted"
                );
                return Ok(());
            }
        }
        self.post_questions(record).await
    }

    async fn left(&mut self, id: &str) -> Result<(), String> {
        self.say_left(id).await
    }

    async fn take(&mut self, message: Message) -> Result<(), String> {
        self.replied(&message.message).await;
        self.state.since = Some(message.id);
        Ok(())
    }

    async fn taken(&mut self) {
        self.save().await;
    }
}

impl Run<'_> {
    async fn save(&self) {
        if let Err(error) = self.kept.save(self.desk, &self.state).await {
            tracing::warn!(%error, "ntfy: its state could not be kept");
        }
    }

    /// Publishes `message` (its `topic` set here).
    async fn publish(&self, mut message: Value) -> Result<(), Failure> {
        message["topic"] = self.channel.topic.clone().into();
        let mut request = self
            .http
            .post(format!("{}/", self.channel.server))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(message.to_string())
            .timeout(PUBLISH_TIMEOUT);
        if let Some(token) = &self.token {
            request = request.bearer_auth(&token.0);
        }
        super::sent(request).await
    }

    /// Posts `record` unless it was: a notification per question with its
    /// buttons, or one that opens the page.
    async fn post_questions(&mut self, record: &Record) -> Result<(), Failure> {
        if self.state.posted.values().any(|p| p.batch.id == record.id) {
            return Ok(());
        }
        let key = self.state.next_key;
        let questions = &record.request.questions;
        let buttons = questions.iter().all(|q| {
            !q.multi_select.unwrap_or(false)
                && q.options
                    .as_ref()
                    .is_some_and(|o| (1..=MOST_BUTTONS).contains(&o.len()))
        });
        let footer = format!(
            "{} · session {}",
            words(&record.agent, 100),
            words(&record.session, 100)
        );
        let address = self.desk.address();
        let mut messages = Vec::new();
        if buttons {
            for (question, asked) in questions.iter().enumerate() {
                let options = asked.options.as_deref().unwrap_or_default();
                let actions: Vec<Value> = options
                    .iter()
                    .enumerate()
                    .map(|(option, o)| {
                        let reply = Reply {
                            k: key,
                            q: question,
                            o: option,
                            m: hex(&mac(&self.state.key, &record.id, key, question, option)
                                .finalize()
                                .into_bytes()),
                        };
                        json!({
                            "action": "http",
                            "label": short(&o.label, 40),
                            "url": format!("{}/{}", self.channel.server, self.channel.replies),
                            "method": "POST",
                            "body": serde_json::to_string(&reply).expect("a reply is plain JSON"),
                            "clear": true,
                        })
                    })
                    .collect();
                let mut lines = vec![words(&asked.question, 1500)];
                lines.extend(options.iter().map(|o| match &o.description {
                    Some(d) => format!("• {} — {}", words(&o.label, 100), words(d, 300)),
                    None => format!("• {}", words(&o.label, 100)),
                }));
                lines.push(footer.clone());
                let of = match questions.len() {
                    1 => String::new(),
                    n => format!(" ({} of {n})", question + 1),
                };
                messages.push(json!({
                    "title": format!("{}{of}", asked.header.as_deref().map_or("An agent asks".to_owned(), |h| words(h, 64))),
                    "message": lines.join("\n"),
                    "tags": ["question"],
                    "click": address,
                    "actions": actions,
                }));
            }
        } else {
            let mut lines: Vec<String> = questions
                .iter()
                .map(|q| format!("• {}", words(&q.question, 500)))
                .collect();
            lines.push(footer);
            messages.push(json!({
                "title": "An agent asks: answer on the page",
                "message": lines.join("\n"),
                "tags": ["question"],
                "click": address,
                "actions": [{"action": "view", "label": "Answer on the page", "url": address}],
            }));
        }
        for message in messages {
            self.publish(message).await?;
        }
        self.state.next_key += 1;
        self.state.posted.insert(
            key,
            Posted {
                buttons,
                batch: Batch::new(record),
            },
        );
        self.save().await;
        Ok(())
    }

    /// Question `id` left: a follow-up says how.
    async fn say_left(&mut self, id: &str) -> Result<(), String> {
        let Some((&key, _)) = self.state.posted.iter().find(|(_, p)| p.batch.id == id) else {
            return Ok(());
        };
        let record = match self.desk.get(id.to_owned()).await {
            Ok(Some(record)) => record,
            Ok(None) => {
                self.state.posted.remove(&key);
                self.save().await;
                return Ok(());
            }
            Err(error) => return Err(error.to_string()),
        };
        let answers = answers_of(&record);
        let lines: Vec<String> = record
            .request
            .questions
            .iter()
            .map(|q| match Answer::of(&answers, &q.id) {
                Some(answer) => format!(
                    "{}: {}",
                    words(&q.question, 200),
                    words(&answer_line(answer), 300)
                ),
                None => words(&q.question, 200),
            })
            .collect();
        self.publish(json!({
            "title": words(&outcome_line(&record), 200),
            "message": lines.join("\n"),
            "tags": ["white_check_mark"],
        }))
        .await
        .map_err(|failure| failure.to_string())?;
        self.state.posted.remove(&key);
        self.save().await;
        Ok(())
    }

    /// A message on the reply topic: a body this inbox signed answers its
    /// question; anything else is passed over (anyone may post there).
    async fn replied(&mut self, body: &str) {
        let Ok(reply) = serde_json::from_str::<Reply>(body) else {
            tracing::debug!("ntfy: a reply that is none of ours was passed over");
            return;
        };
        let Some(posted) = self.state.posted.get(&reply.k) else {
            return;
        };
        let signed = hex_bytes(&reply.m).is_some_and(|m| {
            mac(&self.state.key, &posted.batch.id, reply.k, reply.q, reply.o)
                .verify_slice(&m)
                .is_ok()
        });
        if !signed || !posted.buttons {
            tracing::info!("ntfy: a reply this inbox did not sign was passed over");
            return;
        }
        // Each question's first answer here counts.
        if posted.batch.has(reply.q) {
            return;
        }
        let id = posted.batch.id.clone();
        let record = match self.desk.get(id.clone()).await {
            Ok(Some(record)) if record.state == crate::store::State::Waiting => record,
            Ok(_) => return,
            Err(error) => {
                tracing::warn!(%error, "ntfy: a reply could not be taken");
                return;
            }
        };
        let Some(label) = record
            .request
            .questions
            .get(reply.q)
            .and_then(|q| q.options.as_ref()?.get(reply.o))
            .map(|o| o.label.clone())
        else {
            return;
        };
        let Some(person) = self.person().await else {
            return;
        };
        let answer = Answer {
            id: record.request.questions[reply.q].id.clone(),
            selected: vec![label],
            custom: None,
        };
        let posted = self.state.posted.get_mut(&reply.k).expect("found above");
        let given = posted
            .batch
            .give(self.desk, &record, "ntfy", reply.q, answer, person)
            .await;
        if let Given::Refused(why) = given {
            tracing::info!(why, "ntfy: a reply counts for nothing");
        }
    }

    /// Who answers: in one user's inbox, nobody named (whoever holds the
    /// phone), or `person`; in a team's, the person `person` names, while
    /// their token holds. `None`: nobody may.
    async fn person(&self) -> Option<Option<Person>> {
        if !self.desk.team() {
            return Some(self.channel.person.clone().map(|name| Person {
                name,
                groups: Vec::new(),
            }));
        }
        let Some(name) = &self.channel.person else {
            tracing::warn!(
                "ntfy: in a team's inbox, its answers need person = \"<a person's token name>\""
            );
            return None;
        };
        match self.desk.person(name.clone()).await {
            Ok(Some(person)) => Some(Some(person)),
            Ok(None) => {
                tracing::warn!(
                    name,
                    "ntfy: its person is none of the team's, or was revoked"
                );
                None
            }
            Err(error) => {
                tracing::warn!(%error, "ntfy: who answers could not be read");
                None
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_bytes(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_signed_over_the_question_and_the_choice() {
        let key = "k".repeat(64);
        let signed = hex(&mac(&key, "q1", 3, 0, 1).finalize().into_bytes());
        let checks = |id: &str, k: u64, q: usize, o: usize, m: &str| {
            hex_bytes(m).is_some_and(|m| mac(&key, id, k, q, o).verify_slice(&m).is_ok())
        };
        assert!(checks("q1", 3, 0, 1, &signed));
        assert!(!checks("q2", 3, 0, 1, &signed), "another question");
        assert!(!checks("q1", 3, 0, 2, &signed), "another choice");
        assert!(!checks("q1", 3, 1, 1, &signed), "another of its questions");
        assert!(!checks("q1", 4, 0, 1, &signed));
        let other = hex(&mac(&"x".repeat(64), "q1", 3, 0, 1).finalize().into_bytes());
        assert!(!checks("q1", 3, 0, 1, &other), "another inbox's key");
        assert!(!checks("q1", 3, 0, 1, "zz"));
    }

    #[test]
    fn a_table_is_two_way_and_its_topics_are_checked() {
        let two_way = |text: &str| Ntfy.configure(&toml::from_str::<toml::Value>(text).unwrap());
        assert!(matches!(
            two_way("topic = \"https://ntfy.example/ask-x1\"").unwrap(),
            Configured::TwoWay(_)
        ));
        for (table, why) in [
            ("topic = \"ntfy.example/ask\"", "not a topic's URL"),
            ("topic = \"https://ntfy.example/a b\"", "not a topic's URL"),
            (
                "topic = \"https://ntfy.example/ask\"\nreplies = \"ask\"",
                "another topic",
            ),
            (
                "topic = \"https://ntfy.example/ask\"\nreplies = \"x/y\"",
                "another topic",
            ),
            (
                "topic = \"https://ntfy.example/ask\"\nsecret = 1",
                "unknown field",
            ),
        ] {
            let error = two_way(table).err().expect(table);
            assert!(error.contains(why), "{table}: {error}");
        }
    }
}
