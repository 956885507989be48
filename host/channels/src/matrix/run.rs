//! The channel at work: questions posted as messages, reactions and
//! replies taken as answers, each told what became of it in a notice, and
//! each message edited to say what became of its question.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use ask_user_inbox::notify::{ChannelError, ChannelHost, ChannelKind};
use ask_user_inbox::store::{Person, Record};
use ask_user_seam::Answer;

use super::api::{Api, Delivery, RoomEvent};
use super::message::{self, Reply};
use super::{Matrix, MatrixChannel};
use crate::batch::Given;
use crate::chat::{self, Board, Said};
use crate::driver;
use crate::kept::Kept;
use crate::people;

/// What the channel keeps across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct State {
    /// Where the next `/sync` starts: every event before it was handled.
    pub(super) since: Option<String>,
    /// What it posted.
    #[serde(flatten)]
    board: Board<String>,
    /// The messages of the questions that left last (at most
    /// [`MOST_GONE`]): an answer to one is told it came too late.
    #[serde(default)]
    gone: VecDeque<String>,
}

/// How many messages of questions that left are remembered.
const MOST_GONE: usize = 200;

/// The channel at work.
pub(super) struct Run<'a> {
    channel: &'a MatrixChannel,
    api: Api,
    /// The bot's own user id: its events are passed over.
    bot: String,
    host: &'a dyn ChannelHost,
    state: State,
    kept: Kept,
}

/// What a person did to a question's message.
enum Act {
    /// Reacted with `key`.
    Reacted(String),
    /// Replied `body`.
    Replied(String),
}

impl<'a> Run<'a> {
    /// `channel` at work as `bot`, calling `api`, answering through `host`,
    /// from `state`, kept as `kept`.
    pub(super) fn new(
        channel: &'a MatrixChannel,
        api: Api,
        bot: String,
        host: &'a dyn ChannelHost,
        state: State,
        kept: Kept,
    ) -> Self {
        Run {
            channel,
            api,
            bot,
            host,
            state,
            kept,
        }
    }
}

impl Run<'_> {
    /// The question message `event` is (its batch's key and question).
    fn question_of(&self, event: &str) -> Option<(u64, usize)> {
        self.state.board.posted.iter().find_map(|(&key, posted)| {
            let question = posted.messages.iter().position(|m| m == event)?;
            Some((key, question))
        })
    }

    /// An event of the room: a reaction to a question's message, or a
    /// reply to one; anything else is passed over.
    async fn handle(&mut self, event: RoomEvent) -> Result<(), ChannelError> {
        if event.sender == self.bot {
            return Ok(());
        }
        let relates = &event.content["m.relates_to"];
        let (to, act) = match event.kind.as_str() {
            "m.reaction" if relates["rel_type"] == "m.annotation" => (
                relates["event_id"].as_str(),
                Act::Reacted(relates["key"].as_str().unwrap_or_default().to_owned()),
            ),
            // An edit of a reply is not read again.
            "m.room.message" if relates["rel_type"] != "m.replace" => (
                relates["m.in_reply_to"]["event_id"].as_str(),
                Act::Replied(body_of(&event).to_owned()),
            ),
            _ => return Ok(()),
        };
        let Some(to) = to else {
            return Ok(());
        };
        let shown = self.question_of(to);
        if shown.is_none() && !self.state.gone.iter().any(|gone| gone == to) {
            // Not about a question: the room's own talk.
            return Ok(());
        }
        if !self.channel.allow.contains(&event.sender) {
            tracing::info!(
                user = event.sender,
                "matrix: an answer from someone not in allow; refused"
            );
            let told = format!(
                "You may not answer these questions: {} is not in this inbox's allow list.",
                event.sender
            );
            return self.tell(&event.event_id, &told).await;
        }
        let Some((key, question)) = shown else {
            return self
                .tell(&event.event_id, "This question is no longer waiting.")
                .await;
        };
        let Some(record) = chat::waiting(self, key).await? else {
            return self
                .tell(&event.event_id, "This question is no longer waiting.")
                .await;
        };
        let asked = &record.request.questions[question];
        let options = asked.options.as_deref().unwrap_or_default();
        let multi = asked.multi_select.unwrap_or(false);
        let chosen = match act {
            Act::Reacted(key) => match message::reaction(&key) {
                // Any other reaction (👍) says nothing.
                None => return Ok(()),
                Some(_) if multi => {
                    let told = "Reply with the numbers of your choices (1, 3): a reaction \
                                chooses one.";
                    return self.tell(&event.event_id, told).await;
                }
                Some(option) => Reply::Options(vec![option]),
            },
            Act::Replied(body) => message::reply(&body),
        };
        let answer = match chosen {
            Reply::Options(picked) if !options.is_empty() => {
                if let Some(&wrong) = picked.iter().find(|&&n| n >= options.len()) {
                    let told = format!(
                        "There is no option {}: the options are 1 to {}.",
                        wrong + 1,
                        options.len()
                    );
                    return self.tell(&event.event_id, &told).await;
                }
                if picked.len() > 1 && !multi {
                    let told = "Choose one: reply with one number.";
                    return self.tell(&event.event_id, told).await;
                }
                Answer {
                    id: asked.id.clone(),
                    selected: picked.iter().map(|&n| options[n].label.clone()).collect(),
                    custom: None,
                }
            }
            Reply::Skip if !asked.is_required() => Answer::skipped(asked.id.clone()),
            Reply::Skip => {
                let told = "This question must be answered: it cannot be skipped.";
                return self.tell(&event.event_id, told).await;
            }
            // A question without options takes a number as words.
            Reply::Options(_) | Reply::OwnWords(_) if !asked.own_words().allowed() => {
                let told = "This question takes only its options: reply with a number.";
                return self.tell(&event.event_id, told).await;
            }
            Reply::Options(_) => Answer {
                id: asked.id.clone(),
                selected: Vec::new(),
                custom: Some(message::text(body_of(&event))),
            },
            Reply::OwnWords(words) => Answer {
                id: asked.id.clone(),
                selected: Vec::new(),
                custom: Some(words),
            },
        };
        let person = people::person(
            self.host,
            Matrix::NAME,
            self.channel.people.get(&event.sender),
            &format!("your Matrix user, {},", event.sender),
            || Person {
                name: event.sender.clone(),
                groups: Vec::new(),
            },
        )
        .await;
        let given = match person {
            Ok(person) => chat::give(self, &record, key, question, answer, person).await,
            Err(why) => Given::Refused(why),
        };
        self.tell(&event.event_id, &given.told()).await
    }

    /// Tells whoever sent `event` `text`, in a notice replying to it.
    async fn tell(&self, event: &str, text: &str) -> Result<(), ChannelError> {
        let txn = transaction("n")?;
        self.api
            .send(&txn, &message::notice(event, text))
            .await
            .map(drop)
            // The room no longer takes it: nothing to tell.
            .or_else(driver::refused_is_done)
    }

    async fn save(&self) {
        if let Err(error) = self.kept.save(self.host, &self.state).await {
            tracing::warn!(%error, "matrix: its state could not be kept");
        }
    }
}

/// The body of a message event.
fn body_of(event: &RoomEvent) -> &str {
    event.content["body"].as_str().unwrap_or_default()
}

/// A transaction id never used before, starting `prefix`.
fn transaction(prefix: &str) -> Result<String, ChannelError> {
    ask_user_seam::secret::id(prefix)
        .map_err(|e| ChannelError::down("no transaction id can be made").because(e))
}

impl chat::Chat for Run<'_> {
    type Message = String;

    type Item = Delivery;

    fn name(&self) -> &'static str {
        Matrix::NAME
    }

    fn host(&self) -> &dyn ChannelHost {
        self.host
    }

    fn shows(&self, record: &Record) -> bool {
        ask_user_inbox::store::answerable(&record.audience, &self.channel.groups)
    }

    async fn take(&mut self, delivery: Delivery) -> Result<(), ChannelError> {
        for event in delivery.events {
            // One event that fails is logged; the rest are read, and what
            // was read is not read again.
            if let Err(error) = self.handle(event).await {
                tracing::warn!(
                    error = error.report(),
                    "matrix: an event could not be handled"
                );
            }
        }
        self.state.since = Some(delivery.next_batch);
        Ok(())
    }

    /// Kept before the next `/sync` starts after it.
    async fn taken(&mut self) {
        self.kept.save_surely(self.host, &self.state).await;
    }

    /// Remembered (the last [`MOST_GONE`]): an answer to one is told it
    /// came too late.
    fn forget(&mut self, messages: Vec<String>) {
        let gone = &mut self.state.gone;
        gone.extend(messages);
        while gone.len() > MOST_GONE {
            gone.pop_front();
        }
    }

    fn board(&self) -> &Board<String> {
        &self.state.board
    }

    fn parts(&mut self) -> (&mut Board<String>, &dyn ChannelHost) {
        (&mut self.state.board, self.host)
    }

    /// Sent under a transaction id of the question's own: sent again
    /// after a crash, it is the same message.
    async fn send(
        &self,
        record: &Record,
        _key: u64,
        question: usize,
        _chosen: &BTreeSet<usize>,
    ) -> Result<String, ChannelError> {
        let txn = format!("ask-user.{}.{question}", record.id);
        self.api
            .send(&txn, &message::content(record, question, None))
            .await
    }

    async fn show(
        &self,
        record: &Record,
        _key: u64,
        question: usize,
        event: &String,
        _chosen: &BTreeSet<usize>,
        said: Said<'_>,
    ) -> Result<(), ChannelError> {
        let content = message::content(record, question, Some(said));
        let txn = transaction("e")?;
        self.api
            .send(&txn, &message::edit(event, content))
            .await
            .map(drop)
    }

    async fn keep(&self) {
        self.save().await;
    }
}
