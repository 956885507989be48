//! `[inbox.channels.ntfy]`: the questions as notifications with signed
//! answer buttons, and the reply topic's messages taken as answers.

use std::collections::BTreeMap;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use ask_user_inbox::kind::TokenSource;
use ask_user_inbox::notify::{ChannelError, ChannelHost, ChannelKind, TwoWay};
use ask_user_inbox::store::{BoxFuture, Person, Record, State as Stage};
use ask_user_seam::Answer;

use super::Ntfy;
use super::stream::{Message, Stream};
use crate::batch::{Batch, Given};
use crate::driver::{self, Work};
use crate::http;
use crate::kept::Kept;
use crate::secret::{self, Secret};
use crate::text::{
    AT_THE_COMPUTER, answer_line, answers_of, opens_elsewhere, outcome_line, short, words,
};

/// The two-way channel.
#[derive(Debug)]
pub(super) struct NtfyAnswers {
    /// `https://ntfy.sh`.
    pub server: String,
    pub topic: String,
    pub replies: String,
    /// An access token, read when the inbox starts.
    pub token: Option<TokenSource>,
    /// Who answers, in a team's inbox.
    pub person: Option<String>,
}

impl NtfyAnswers {
    /// The access token (when there is one) read now, and an HTTP client.
    fn client(&self) -> Result<(Option<Secret>, reqwest::Client), ChannelError> {
        Ok((self.token()?, http::client()?))
    }

    /// The access token, when there is one, read now.
    fn token(&self) -> Result<Option<Secret>, ChannelError> {
        self.token
            .as_ref()
            .map(|source| secret::read(source, "the ntfy access token"))
            .transpose()
    }
}

/// The most options a question may have for buttons: ntfy shows three
/// actions.
const MOST_BUTTONS: usize = 3;

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
        Ntfy::NAME
    }

    fn check(&self) -> Result<(), ChannelError> {
        self.token().map(drop)
    }

    fn run(self: Arc<Self>, host: Arc<dyn ChannelHost>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let (token, http) = match self.client() {
                Ok(client) => client,
                Err(error) => {
                    return tracing::error!(
                        error = error.report(),
                        "ntfy: the channel cannot start"
                    );
                }
            };
            let mut events = host.events();
            let kept = Kept::new(Ntfy::NAME);
            let mut state: State = kept.load_surely(&*host).await;
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
            let stream = Stream::new(
                format!("{}/{}/json", self.server, self.replies),
                token.as_ref().map(|t| t.0.clone()),
                http.clone(),
                state.since.clone(),
            );
            let mut run = Run {
                channel: &self,
                token,
                http,
                host: &*host,
                state,
                kept,
            };
            driver::serve(&mut run, stream, &mut events).await;
        })
    }
}

struct Run<'a> {
    channel: &'a NtfyAnswers,
    token: Option<Secret>,
    http: reqwest::Client,
    host: &'a dyn ChannelHost,
    state: State,
    kept: Kept,
}

impl Work for Run<'_> {
    type Item = Message;

    fn name(&self) -> &'static str {
        Ntfy::NAME
    }

    fn host(&self) -> &dyn ChannelHost {
        self.host
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
    async fn post(&mut self, record: &Record) -> Result<(), ChannelError> {
        if self.host.team() {
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

    async fn left(&mut self, id: &str) -> Result<(), ChannelError> {
        self.say_left(id).await
    }

    async fn take(&mut self, message: Message) -> Result<(), ChannelError> {
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
        if let Err(error) = self.kept.save(self.host, &self.state).await {
            tracing::warn!(%error, "ntfy: its state could not be kept");
        }
    }

    /// Publishes `message` (its `topic` set here).
    async fn publish(&self, mut message: Value) -> Result<(), ChannelError> {
        message["topic"] = self.channel.topic.clone().into();
        let token = self.token.as_ref().map(|token| token.0.as_str());
        super::publish(&self.http, &self.channel.server, token, &message).await
    }

    /// Posts `record` unless it was: a notification per question with its
    /// buttons, or one that opens the page.
    async fn post_questions(&mut self, record: &Record) -> Result<(), ChannelError> {
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
            words(&record.asker(), 200),
            words(&ask_user_seam::text::session(&record.session), 100)
        );
        let address = self.host.address();
        // A page on this machine's loopback opens nowhere on a phone:
        // neither linked nor offered.
        let click = opens_elsewhere(&address).then_some(address);
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
                let mut message = json!({
                    "title": format!("{}{of}", asked.header.as_deref().map_or("An agent asks".to_owned(), |h| words(h, 64))),
                    "message": lines.join("\n"),
                    "tags": ["question"],
                    "actions": actions,
                    "sequence_id": sequence(&record.id, question),
                });
                if let Some(address) = &click {
                    message["click"] = address.as_str().into();
                }
                messages.push(message);
            }
        } else {
            let mut lines: Vec<String> = questions
                .iter()
                .map(|q| format!("• {}", words(&q.question, 500)))
                .collect();
            lines.push(footer);
            messages.push(match click {
                Some(address) => json!({
                    "title": "An agent asks: answer on the page",
                    "message": lines.join("\n"),
                    "tags": ["question"],
                    "click": address,
                    "actions": [{"action": "view", "label": "Answer on the page", "url": address}],
                    "sequence_id": sequence(&record.id, 0),
                }),
                None => {
                    lines.push(AT_THE_COMPUTER.to_owned());
                    json!({
                        "title": "An agent asks: answer at your computer",
                        "message": lines.join("\n"),
                        "tags": ["question"],
                        "sequence_id": sequence(&record.id, 0),
                    })
                }
            });
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

    /// Question `id` left: its notifications say how, in place (each
    /// notification posted of it is updated, its buttons gone, where the
    /// server keeps sequences; an older server posts them as new ones).
    async fn say_left(&mut self, id: &str) -> Result<(), ChannelError> {
        let Some((&key, posted)) = self.state.posted.iter().find(|(_, p)| p.batch.id == id) else {
            return Ok(());
        };
        let buttons = posted.buttons;
        let record = match self.host.get(id.to_owned()).await {
            Ok(Some(record)) => record,
            Ok(None) => {
                self.state.posted.remove(&key);
                self.save().await;
                return Ok(());
            }
            Err(error) => return Err(error.into()),
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
        let title = words(&outcome_line(&record, self.host), 200);
        // A notification per question had buttons: each says its own.
        let updates: Vec<(usize, String)> = match buttons {
            true => lines.into_iter().enumerate().collect(),
            false => vec![(0, lines.join("\n"))],
        };
        for (question, message) in updates {
            self.publish(json!({
                "title": title,
                "message": message,
                "tags": ["white_check_mark"],
                "sequence_id": sequence(id, question),
            }))
            .await?;
        }
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
        let record = match self.host.get(id.clone()).await {
            Ok(Some(record)) if record.state == Stage::Waiting => record,
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
            .give(self.host, &record, Ntfy::NAME, reply.q, answer, person)
            .await;
        if let Given::Refused(why) = given {
            tracing::info!(why, "ntfy: a reply counts for nothing");
        }
    }

    /// Who answers: in one user's inbox, nobody named (whoever holds the
    /// phone), or `person`; in a team's, the person `person` names, while
    /// their token holds. `None`: nobody may.
    async fn person(&self) -> Option<Option<Person>> {
        if !self.host.team() {
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
        match self.host.person(name.clone()).await {
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

/// The sequence of the notification of question `question` of batch `id`:
/// ntfy (2.16 and later) updates a notification in place when another is
/// published with its sequence.
fn sequence(id: &str, question: usize) -> String {
    format!("{id}-{question}")
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
}
