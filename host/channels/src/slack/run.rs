//! The channel at work: questions posted as Block Kit messages, presses,
//! checkboxes and the own-words modal taken as answers, and each message
//! edited to say what became of its question.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use ask_user_inbox::notify::{ChannelError, ChannelHost, ChannelKind, ErrorKind};
use ask_user_inbox::store::{Person, Record};
use ask_user_seam::Answer;

use super::api::Api;
use super::blocks::{self, OWN_WORDS};
use super::events::{Action, Container, Interaction, PostedMessage, User, View};
use super::{Slack, SlackChannel};
use crate::batch::Given;
use crate::chat::{self, Board, Said};
use crate::driver;
use crate::kept::Kept;
use crate::people;
use crate::press::Press;
use crate::text::{escape, words};

/// What the channel keeps across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct State {
    /// What it posted.
    #[serde(flatten)]
    board: Board<String>,
}

/// The channel at work.
pub(super) struct Run<'a> {
    channel: &'a SlackChannel,
    api: Api,
    host: &'a dyn ChannelHost,
    state: State,
    kept: Kept,
}

impl<'a> Run<'a> {
    /// `channel` at work, calling `api`, answering through `host`, from
    /// `state`, kept as `kept`.
    pub(super) fn new(
        channel: &'a SlackChannel,
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

impl chat::Chat for Run<'_> {
    type Message = String;

    type Item = Interaction;

    fn name(&self) -> &'static str {
        Slack::NAME
    }

    fn host(&self) -> &dyn ChannelHost {
        self.host
    }

    fn shows(&self, record: &Record) -> bool {
        ask_user_inbox::store::answerable(&record.audience, &self.channel.groups)
    }

    async fn take(&mut self, interaction: Interaction) -> Result<(), ChannelError> {
        match interaction {
            Interaction::BlockActions {
                user,
                actions,
                container,
                trigger_id,
            } => {
                let Some(action) = actions.into_iter().next() else {
                    return Ok(());
                };
                self.acted(&user, action, container, trigger_id).await
            }
            Interaction::ViewSubmission { user, view } => self.submitted(&user, view).await,
            Interaction::Other => Ok(()),
        }
    }

    async fn taken(&mut self) {
        self.save().await;
    }

    fn board(&self) -> &Board<String> {
        &self.state.board
    }

    fn parts(&mut self) -> (&mut Board<String>, &dyn ChannelHost) {
        (&mut self.state.board, self.host)
    }

    async fn send(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        chosen: &BTreeSet<usize>,
    ) -> Result<String, ChannelError> {
        let body = json!({
            "channel": self.channel.channel,
            "text": blocks::fallback(record, question),
            "blocks": blocks::blocks(record, key, question, chosen, None),
            "parse": "none",
            "link_names": false,
            "unfurl_links": false,
            "unfurl_media": false,
        });
        let sent: PostedMessage = self.api.call("chat.postMessage", &body, false).await?;
        Ok(sent.ts)
    }

    async fn show(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        ts: &String,
        chosen: &BTreeSet<usize>,
        said: Said<'_>,
    ) -> Result<(), ChannelError> {
        let blocks = match said {
            Said::Given { answer, told } => {
                let said = format!(
                    "*Your answer:* {} · {}",
                    escape(&words(answer, 500)),
                    escape(told)
                );
                blocks::blocks(record, key, question, chosen, Some(&said))
            }
            Said::Left { outcome, answer } => {
                let answer = answer.map(|a| format!(": {}", escape(&words(a, 500))));
                let said = format!(
                    "*{}*{}",
                    escape(&words(outcome, 300)),
                    answer.unwrap_or_default()
                );
                blocks::settled(record, question, &said)
            }
        };
        let body = json!({
            "channel": self.channel.channel,
            "ts": ts,
            "text": blocks::fallback(record, question),
            "blocks": blocks,
            "parse": "none",
            "link_names": false,
        });
        self.api
            .call::<Value>("chat.update", &body, false)
            .await
            .map(drop)
    }

    async fn keep(&self) {
        self.save().await;
    }
}

impl Run<'_> {
    async fn save(&self) {
        if let Err(error) = self.kept.save(self.host, &self.state).await {
            tracing::warn!(%error, "slack: its state could not be kept");
        }
    }

    /// Tells `user` `text`, in the channel, to them alone.
    async fn tell(&self, user: &User, text: &str) -> Result<(), ChannelError> {
        let body = json!({"channel": self.channel.channel, "user": user.id, "text": escape(text)});
        self.api
            .call::<Value>("chat.postEphemeral", &body, false)
            .await
            .map(drop)
            .or_else(driver::refused_is_done)
    }

    /// A button or checkboxes of a question message.
    async fn acted(
        &mut self,
        user: &User,
        action: Action,
        container: Container,
        trigger_id: Option<String>,
    ) -> Result<(), ChannelError> {
        if !self.channel.allow.contains(&user.id) {
            tracing::info!(
                user = user.id,
                "slack: someone not in allow pressed a button; refused"
            );
            return self
                .tell(
                    user,
                    "You may not answer these questions: you are not in this inbox's allow list.",
                )
                .await;
        }
        let in_channel = container.channel_id.as_deref() == Some(self.channel.channel.as_str());
        // Checkboxes give every option ticked in their element.
        let ticked: Vec<Press> = action
            .selected_options
            .iter()
            .filter_map(|choice| Press::parse(&choice.value))
            .collect();
        let press = match action.kind.as_str() {
            "checkboxes" => action.action_id.as_deref().and_then(Press::parse),
            _ => action.value.as_deref().and_then(Press::parse),
        };
        let found = press.filter(|press| {
            in_channel
                && self.state.board.posted.get(&press.key()).is_some_and(|p| {
                    p.messages.get(press.question()) == container.message_ts.as_ref()
                })
        });
        let Some(press) = found else {
            return self.tell(user, "This question is no longer waiting.").await;
        };
        let (key, question) = (press.key(), press.question());
        let Some(record) = chat::waiting(self, key).await? else {
            return self.tell(user, "This question is no longer waiting.").await;
        };
        let asked = &record.request.questions[question];
        let options = asked.options.as_deref().unwrap_or_default();
        let answer = match press {
            Press::Choose { option, .. } => match options.get(option) {
                Some(o) => Answer {
                    id: asked.id.clone(),
                    selected: vec![o.label.clone()],
                    custom: None,
                },
                None => return self.tell(user, "No such option.").await,
            },
            // The element: action id `t<key>.<question>.<first option>`.
            Press::Toggle { option: first, .. } => {
                let range = first..(first + blocks::OPTIONS_PER_CHECKBOXES).min(options.len());
                let chosen: BTreeSet<usize> = ticked
                    .iter()
                    .filter(|t| t.key() == key && t.question() == question)
                    .filter_map(|t| match *t {
                        Press::Toggle { option, .. } if range.contains(&option) => Some(option),
                        _ => None,
                    })
                    .collect();
                let posted = self.state.board.posted.get_mut(&key).expect("found above");
                posted.batch.tick(question, range, &chosen);
                return Ok(());
            }
            Press::Send { .. } => Answer {
                id: asked.id.clone(),
                selected: self.state.board.posted[&key]
                    .batch
                    .ticked(&record, question),
                custom: None,
            },
            Press::Skip { .. } => Answer::skipped(asked.id.clone()),
            Press::OwnWords { .. } => {
                let view = json!({
                    "trigger_id": trigger_id.unwrap_or_default(),
                    "view": blocks::own_words(&record, &press),
                });
                return match self.api.call::<Value>("views.open", &view, false).await {
                    Ok(_) => Ok(()),
                    Err(error) if error.kind() == ErrorKind::Refused => {
                        tracing::debug!(
                            error = error.report(),
                            "slack: the own-words modal could not be opened"
                        );
                        self.tell(
                            user,
                            "The form could not be opened; press the button again.",
                        )
                        .await
                    }
                    Err(down) => Err(down),
                };
            }
        };
        self.answered(&record, key, question, answer, user).await
    }

    /// The own-words modal was sent.
    async fn submitted(&mut self, user: &User, view: View) -> Result<(), ChannelError> {
        if view.callback_id.as_deref() != Some(OWN_WORDS) {
            return Ok(());
        }
        if !self.channel.allow.contains(&user.id) {
            tracing::info!(
                user = user.id,
                "slack: own words from someone not in allow; refused"
            );
            return Ok(());
        }
        let Some(Press::OwnWords { key, question }) =
            view.private_metadata.as_deref().and_then(Press::parse)
        else {
            return Ok(());
        };
        let text = view
            .input(blocks::OWN_WORDS_INPUT.0, blocks::OWN_WORDS_INPUT.1)
            .unwrap_or_default()
            .to_owned();
        let Some(record) = chat::waiting(self, key).await? else {
            return self.tell(user, "This question is no longer waiting.").await;
        };
        let Some(asked) = record.request.questions.get(question) else {
            return Ok(());
        };
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
            custom: Some(text),
        };
        self.answered(&record, key, question, answer, user).await
    }

    /// `answer` to question `question` of `record` (under `key`) from
    /// `user` ([`chat::give`], once they are known to be someone who may
    /// answer); `user` is told what became of it.
    async fn answered(
        &mut self,
        record: &Record,
        key: u64,
        question: usize,
        answer: Answer,
        user: &User,
    ) -> Result<(), ChannelError> {
        let person = people::person(
            self.host,
            Slack::NAME,
            self.channel.people.get(&user.id),
            &format!("your Slack user, {},", user.id),
            || Person {
                name: user.name(),
                groups: Vec::new(),
            },
        )
        .await;
        let given = match person {
            Ok(person) => chat::give(self, record, key, question, answer, person).await,
            Err(why) => Given::Refused(why),
        };
        // Answered: its messages are updated when the inbox says it left.
        match given {
            Given::Answered => Ok(()),
            told => self.tell(user, &told.told()).await,
        }
    }
}
