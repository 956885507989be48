//! The channel at work: questions posted as messages with a keyboard,
//! presses and replies taken as answers, and each message edited to say
//! what became of its question.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use ask_user_inbox::notify::{ChannelError, ChannelHost, ChannelKind};
use ask_user_inbox::store::{Person, Record};
use ask_user_seam::Answer;

use super::api::{Api, CALL_TIMEOUT, CallbackQuery, Message, SentMessage, Update, User};
use super::{Telegram, TelegramChannel};
use crate::batch::Given;
use crate::chat::{self, Board, Said};
use crate::driver;
use crate::kept::Kept;
use crate::people;
use crate::press::Press;
use crate::text::{escape, short, words};

/// A message's text may have 4096 characters; the model's words are cut
/// well within it.
const MAX_MESSAGE_CHARS: usize = 3900;

/// What the channel keeps across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct State {
    /// The next update to ask for: every one before it was handled.
    pub(super) offset: i64,
    /// What it posted.
    #[serde(flatten)]
    board: Board<i64>,
    /// The prompts for own words: the prompt's message, and the batch
    /// (its key) and question it asks for.
    prompts: BTreeMap<i64, (u64, usize)>,
}

/// The channel at work.
pub(super) struct Run<'a> {
    channel: &'a TelegramChannel,
    api: Api,
    host: &'a dyn ChannelHost,
    state: State,
    kept: Kept,
}

impl<'a> Run<'a> {
    /// `channel` at work, calling `api`, answering through `host`, from
    /// `state`, kept as `kept`.
    pub(super) fn new(
        channel: &'a TelegramChannel,
        api: Api,
        host: &'a dyn ChannelHost,
        state: State,
        kept: Kept,
    ) -> Self {
        Run {
            channel,
            api,
            host,
            state,
            kept,
        }
    }
}

impl Run<'_> {
    /// Keeps the state; a store that fails is logged (what it kept is
    /// read at the next start).
    async fn save(&self) {
        if let Err(error) = self.kept.save(self.host, &self.state).await {
            tracing::warn!(%error, "telegram: its state could not be kept");
        }
    }

    async fn handle(&mut self, update: Update) -> Result<(), ChannelError> {
        if let Some(query) = update.callback_query {
            return self.pressed(query).await;
        }
        if let Some(message) = update.message {
            return self.replied(message).await;
        }
        Ok(())
    }

    /// A button was pressed.
    async fn pressed(&mut self, query: CallbackQuery) -> Result<(), ChannelError> {
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
            let posted = self.state.board.posted.get(&press.key())?;
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
        let posted = self.state.board.posted.get_mut(&key).expect("found above");
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
                return marked.map(drop).or_else(driver::refused_is_done);
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
    async fn replied(&mut self, message: Message) -> Result<(), ChannelError> {
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
            true => self.state.board.posted[&key]
                .batch
                .ticked(&record, question),
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
            .or_else(driver::refused_is_done)
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
        let person = people::person(
            self.host,
            Telegram::NAME,
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
    async fn tell(&self, query: &str, text: &str, alert: bool) -> Result<(), ChannelError> {
        // The Bot API takes at most 200 characters.
        let text: String = text.chars().take(200).collect();
        let body = json!({"callback_query_id": query, "text": text, "show_alert": alert});
        self.api
            .call::<Value>("answerCallbackQuery", &body, CALL_TIMEOUT)
            .await
            .map(drop)
            // Too old to answer (after a restart): nothing to stop.
            .or_else(driver::refused_is_done)
    }
}

impl chat::Chat for Run<'_> {
    type Message = i64;

    type Item = Update;

    fn name(&self) -> &'static str {
        Telegram::NAME
    }

    fn host(&self) -> &dyn ChannelHost {
        self.host
    }

    fn shows(&self, record: &Record) -> bool {
        ask_user_inbox::store::answerable(&record.audience, &self.channel.groups)
    }

    async fn take(&mut self, update: Update) -> Result<(), ChannelError> {
        self.state.offset = self.state.offset.max(update.update_id + 1);
        self.handle(update).await
    }

    /// Kept before the next poll confirms them.
    async fn taken(&mut self) {
        // A prompt of a batch that left asks for nothing.
        let posted = &self.state.board.posted;
        self.state
            .prompts
            .retain(|_, (key, _)| posted.contains_key(key));
        self.kept.save_surely(self.host, &self.state).await;
    }

    fn board(&self) -> &Board<i64> {
        &self.state.board
    }

    fn parts(&mut self) -> (&mut Board<i64>, &dyn ChannelHost) {
        (&mut self.state.board, self.host)
    }

    async fn send(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        chosen: &BTreeSet<usize>,
    ) -> Result<i64, ChannelError> {
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
    ) -> Result<(), ChannelError> {
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
        escape(&words(&record.asker(), 200)),
        escape(&words(&ask_user_seam::text::session(&record.session), 100))
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
        crate::record_of(AskRequest { questions })
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
        assert!(second.contains(crate::text::CONTINUED) && second.ends_with("<b>Answered</b>"));
        assert!(second.chars().count() <= MAX_MESSAGE_CHARS);
        let keys = keyboard(&record, 9, 0, &BTreeSet::new());
        let rows = keys["inline_keyboard"].as_array().unwrap();
        assert_eq!(rows.len(), 33);
        assert_eq!(rows[31][0]["callback_data"], "c9.0.31");
    }
}
