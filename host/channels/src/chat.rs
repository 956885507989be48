//! What the chat channels share (Telegram, Slack): a batch is posted as one
//! message per question; a message shows the answer given to its question
//! while the batch waits for the others, and says how the question left
//! (answered anywhere, dismissed, withdrawn, expired), without its buttons,
//! once it left. A channel says how to send and edit a message
//! ([`Chat`]); posting, editing and giving answers are written here once.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

use serde::{Deserialize, Serialize};

use ask_user_seam::Answer;

use ask_user_inbox::notify::{ChannelError, ChannelHost};
use ask_user_inbox::store::{Person, Record};

use crate::batch::{Batch, Given};
use crate::driver::{self, Work};
use crate::text::{answer_line, answers_of, outcome_line};

/// What every chat keeps (flattened into its state): the batches posted
/// and still waiting, by the key each was posted under, and the next key.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound = "M: Serialize + serde::de::DeserializeOwned")]
pub struct Board<M> {
    next_key: u64,
    /// By key, written as JSON writes a map's keys (strings): flattened,
    /// a state is read through serde's buffer, which reads no number from
    /// a key.
    #[serde(with = "by_key")]
    pub posted: BTreeMap<u64, Posted<M>>,
}

/// A map by number, its keys written and read as strings.
mod by_key {
    use std::collections::BTreeMap;

    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, V: Serialize>(
        map: &BTreeMap<u64, V>,
        to: S,
    ) -> Result<S::Ok, S::Error> {
        to.collect_map(map.iter().map(|(key, value)| (key.to_string(), value)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
        from: D,
    ) -> Result<BTreeMap<u64, V>, D::Error> {
        BTreeMap::<String, V>::deserialize(from)?
            .into_iter()
            .map(|(key, value)| Ok((key.parse().map_err(D::Error::custom)?, value)))
            .collect()
    }
}

impl<M> Default for Board<M> {
    fn default() -> Self {
        Board {
            next_key: 0,
            posted: BTreeMap::new(),
        }
    }
}

impl<M> Board<M> {
    /// A key never used before.
    fn new_key(&mut self) -> u64 {
        self.next_key += 1;
        self.next_key - 1
    }
}

/// A batch posted: its messages (each a service's id of one, in the
/// questions' order: fewer while posting failed half-way), and what was
/// answered and ticked so far.
#[derive(Debug, Serialize, Deserialize)]
pub struct Posted<M> {
    pub messages: Vec<M>,
    pub batch: Batch,
}

/// What a question's message says under the question.
#[derive(Debug, Clone, Copy)]
pub enum Said<'a> {
    /// The answer given to it here (as a line); the batch waits for the
    /// others, and `told` says how many.
    Given { answer: &'a str, told: &'a str },
    /// It left: how (`outcome`), and its answer, when it was answered.
    Left {
        outcome: &'a str,
        answer: Option<&'a str>,
    },
}

/// A channel that posts a message per question. It is a [`Work`] as every
/// chat is one: its questions posted, shown and said to have left here.
pub trait Chat: Send {
    /// The service's id of a message.
    type Message: Clone + Send + Sync + 'static;

    /// What its service delivers: an update, an interaction, a sync.
    type Item: Send;

    /// Its kind's name, for the log and as who settled a question.
    fn name(&self) -> &'static str;

    fn host(&self) -> &dyn ChannelHost;

    /// Whether `record` is shown here: its audience is the chat's.
    fn shows(&self, record: &Record) -> bool;

    /// Takes what the service delivered.
    fn take(&mut self, item: Self::Item) -> impl Future<Output = Result<(), ChannelError>> + Send;

    /// One delivery was taken: what must be kept before the next is asked
    /// for is kept.
    fn taken(&mut self) -> impl Future<Output = ()> + Send;

    /// The messages of a question that left, each edited to say so: what
    /// the chat remembers of them (nothing, unless it tells a late answer).
    fn forget(&mut self, messages: Vec<Self::Message>) {
        drop(messages);
    }

    /// What it posted ([`Board`], kept in its state).
    fn board(&self) -> &Board<Self::Message>;

    /// The same, to change, and the channel's host (the inbox) beside it.
    fn parts(&mut self) -> (&mut Board<Self::Message>, &dyn ChannelHost);

    /// Sends the message of question `question` of `record`, posted under
    /// `key`, with its buttons (`chosen` ticked).
    fn send(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        chosen: &BTreeSet<usize>,
    ) -> impl Future<Output = Result<Self::Message, ChannelError>> + Send;

    /// Edits `message`, question `question`'s, to say `said`: with its
    /// buttons (`chosen` ticked) while the question waits, without them
    /// once it left.
    fn show(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        message: &Self::Message,
        chosen: &BTreeSet<usize>,
        said: Said<'_>,
    ) -> impl Future<Output = Result<(), ChannelError>> + Send;

    /// Keeps the channel's state.
    fn keep(&self) -> impl Future<Output = ()> + Send;
}

impl<C: Chat> Work for C {
    type Item = C::Item;

    fn name(&self) -> &'static str {
        Chat::name(self)
    }

    fn host(&self) -> &dyn ChannelHost {
        Chat::host(self)
    }

    fn shows(&self, record: &Record) -> bool {
        Chat::shows(self, record)
    }

    fn shown(&self) -> Vec<String> {
        self.board()
            .posted
            .values()
            .map(|p| p.batch.id.clone())
            .collect()
    }

    async fn post(&mut self, record: &Record) -> Result<(), ChannelError> {
        post(self, record).await
    }

    async fn left(&mut self, id: &str) -> Result<(), ChannelError> {
        left(self, id).await
    }

    async fn take(&mut self, item: C::Item) -> Result<(), ChannelError> {
        Chat::take(self, item).await
    }

    async fn taken(&mut self) {
        Chat::taken(self).await;
    }
}

/// The key `id` is posted under.
fn key_of<C: Chat>(chat: &C, id: &str) -> Option<u64> {
    chat.board()
        .posted
        .iter()
        .find(|(_, p)| p.batch.id == id)
        .map(|(&key, _)| key)
}

/// Posts what is not posted yet of `record`: a message per question. What
/// was posted is kept when the rest fails, to be posted later.
async fn post<C: Chat>(chat: &mut C, record: &Record) -> Result<(), ChannelError> {
    let count = record.request.questions.len();
    let key = match key_of(chat, &record.id) {
        Some(key) => key,
        None => {
            let key = chat.parts().0.new_key();
            let posted = Posted {
                messages: Vec::new(),
                batch: Batch::new(record),
            };
            chat.parts().0.posted.insert(key, posted);
            key
        }
    };
    while let Some(posted) = chat.board().posted.get(&key)
        && posted.messages.len() < count
    {
        let question = posted.messages.len();
        let chosen = posted.batch.chosen(question).clone();
        match chat.send(record, key, question, &chosen).await {
            Ok(message) => {
                if let Some(posted) = chat.parts().0.posted.get_mut(&key) {
                    posted.messages.push(message);
                }
            }
            Err(error) => {
                chat.keep().await;
                return Err(error);
            }
        }
    }
    chat.keep().await;
    Ok(())
}

/// Question `id` left: each of its messages says how, and loses its
/// buttons. A message that cannot be edited any more (deleted) is passed
/// over.
async fn left<C: Chat>(chat: &mut C, id: &str) -> Result<(), ChannelError> {
    let Some(key) = key_of(chat, id) else {
        return Ok(());
    };
    let record = Chat::host(chat).get(id.to_owned()).await?;
    if let Some(record) = record {
        let answers = answers_of(&record);
        let outcome = outcome_line(&record, Chat::host(chat));
        let messages = chat.board().posted[&key].messages.clone();
        for (question, message) in messages.iter().enumerate() {
            let answer = record
                .request
                .questions
                .get(question)
                .and_then(|q| Answer::of(&answers, &q.id))
                .map(answer_line);
            let said = Said::Left {
                outcome: &outcome,
                answer: answer.as_deref(),
            };
            let shown = chat
                .show(&record, key, question, message, &BTreeSet::new(), said)
                .await;
            shown.or_else(driver::refused_is_done)?;
        }
    }
    if let Some(posted) = chat.parts().0.posted.remove(&key) {
        chat.forget(posted.messages);
    }
    chat.keep().await;
    Ok(())
}

/// The batch posted under `key`, while it waits; one that left is said so
/// on its messages, and is `None`.
pub async fn waiting<C: Chat>(chat: &mut C, key: u64) -> Result<Option<Record>, ChannelError> {
    let Some(id) = chat.board().posted.get(&key).map(|p| p.batch.id.clone()) else {
        return Ok(None);
    };
    driver::still_waiting(chat, &id).await
}

/// `answer` to question `question` of `record` (the batch under `key`)
/// from `person`: given to the batch, which is answered once every
/// question has one; until then its message shows the answer given. The
/// state is kept before anyone is told.
pub async fn give<C: Chat>(
    chat: &mut C,
    record: &Record,
    key: u64,
    question: usize,
    answer: Answer,
    person: Person,
) -> Given {
    let name = Chat::name(chat);
    let line = answer_line(&answer);
    let (board, host) = chat.parts();
    let Some(posted) = board.posted.get_mut(&key) else {
        return Given::Refused("this question is no longer waiting.".to_owned());
    };
    let given = posted
        .batch
        .give(host, record, name, question, answer, Some(person))
        .await;
    if let Given::Noted(_) = given {
        let posted = &chat.board().posted[&key];
        let (message, chosen) = (
            posted.messages[question].clone(),
            posted.batch.chosen(question).clone(),
        );
        let told = given.told();
        let said = Said::Given {
            answer: &line,
            told: &told,
        };
        if let Err(error) = chat
            .show(record, key, question, &message, &chosen, said)
            .await
        {
            tracing::debug!(
                channel = name,
                error = error.report(),
                "an answer given could not be shown"
            );
        }
    }
    chat.keep().await;
    // Answered: its messages are edited when the inbox says it left.
    given
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chat's state as it keeps it: its own fields beside the board's.
    #[derive(Debug, Default, Serialize, Deserialize)]
    struct State {
        offset: i64,
        #[serde(flatten)]
        board: Board<i64>,
    }

    #[test]
    fn a_board_flattened_in_a_state_is_read_back_as_it_was_written() {
        let mut state = State {
            offset: 7,
            ..State::default()
        };
        let record = crate::record_of(ask_user_seam::AskRequest {
            questions: vec![ask_user_seam::Question::new("q", "Why?")],
        });
        let key = state.board.new_key();
        state.board.posted.insert(
            key,
            Posted {
                messages: vec![42],
                batch: Batch::new(&record),
            },
        );
        state.board.new_key();
        let text = serde_json::to_string(&state).unwrap();
        assert!(
            text.contains(r#""next_key":2"#) && text.contains(r#""posted":{"0":"#),
            "{text}"
        );
        let read: State = serde_json::from_str(&text).unwrap();
        assert_eq!(read.offset, 7);
        assert_eq!(read.board.posted[&0].messages, [42]);
        assert_eq!(read.board.next_key, 2);
    }
}
