//! What Slack sends, as the channel reads it: a Socket Mode envelope and
//! the interactions it carries (a button or checkboxes pressed, the
//! own-words modal sent). Everything in it comes from Slack on behalf of
//! whoever pressed: untrusted, and checked against what was posted.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A Socket Mode envelope: acknowledged by its id, then its payload read.
#[derive(Debug, Deserialize)]
pub(super) struct Envelope {
    #[serde(rename = "type")]
    pub kind: String,
    pub envelope_id: Option<String>,
    /// Why Slack closes the connection (`"disconnect"`).
    pub reason: Option<String>,
    /// Read once the envelope is acknowledged ([`Interaction`]).
    pub payload: Option<serde_json::Value>,
}

/// An interaction with a message or a modal of the channel's; any other
/// kind is [`Interaction::Other`].
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Interaction {
    /// A button or checkboxes of a question's message.
    BlockActions {
        user: User,
        #[serde(default)]
        actions: Vec<Action>,
        #[serde(default)]
        container: Container,
        trigger_id: Option<String>,
    },
    /// A modal was sent.
    ViewSubmission { user: User, view: View },
    #[serde(other)]
    Other,
}

/// Who did something in Slack.
#[derive(Debug, Deserialize)]
pub(super) struct User {
    pub id: String,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub name: String,
}

impl User {
    /// As the inbox names who answered.
    pub fn name(&self) -> String {
        match (self.username.is_empty(), self.name.is_empty()) {
            (false, _) => format!("@{}", self.username),
            (true, false) => format!("@{}", self.name),
            (true, true) => format!("Slack user {}", self.id),
        }
    }
}

/// An element acted on: a button (its `value`) or checkboxes (their
/// `action_id`, and every option ticked in them).
#[derive(Debug, Deserialize)]
pub(super) struct Action {
    #[serde(rename = "type")]
    pub kind: String,
    pub action_id: Option<String>,
    pub value: Option<String>,
    #[serde(default)]
    pub selected_options: Vec<Choice>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Choice {
    pub value: String,
}

/// The message an action was in.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Container {
    pub message_ts: Option<String>,
    pub channel_id: Option<String>,
}

/// A modal as it was sent.
#[derive(Debug, Deserialize)]
pub(super) struct View {
    pub callback_id: Option<String>,
    pub private_metadata: Option<String>,
    #[serde(default)]
    pub state: ViewState,
}

/// A modal's inputs: by block id, then action id.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ViewState {
    #[serde(default)]
    pub values: BTreeMap<String, BTreeMap<String, Input>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Input {
    pub value: Option<String>,
}

impl View {
    /// What was typed in input `action` of block `block`.
    pub fn input(&self, block: &str, action: &str) -> Option<&str> {
        self.state.values.get(block)?.get(action)?.value.as_deref()
    }
}

/// `chat.postMessage`'s reply: the message's id.
#[derive(Debug, Deserialize)]
pub(super) struct PostedMessage {
    pub ts: String,
}

/// `apps.connections.open`'s reply: the socket's address (it holds a
/// ticket: never shown).
#[derive(Deserialize)]
pub(super) struct Opened {
    pub url: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interaction_reads_as_its_kind_and_any_other_kind_as_other() {
        let pressed: Interaction = serde_json::from_str(
            r#"{"type": "block_actions", "user": {"id": "U1", "username": "ana"},
                "trigger_id": "t", "container": {"message_ts": "1.2", "channel_id": "C1"},
                "actions": [{"type": "checkboxes", "action_id": "t1.0.0",
                             "selected_options": [{"value": "t1.0.2"}]}]}"#,
        )
        .unwrap();
        let Interaction::BlockActions {
            user,
            actions,
            container,
            ..
        } = pressed
        else {
            panic!("a block action: {pressed:?}");
        };
        assert_eq!(user.name(), "@ana");
        assert_eq!(container.message_ts.as_deref(), Some("1.2"));
        assert_eq!(actions[0].selected_options[0].value, "t1.0.2");
        let sent: Interaction = serde_json::from_str(
            r#"{"type": "view_submission", "user": {"id": "U1"}, "view": {"callback_id": "x",
                "state": {"values": {"answer": {"text": {"value": "hi"}}}}}}"#,
        )
        .unwrap();
        let Interaction::ViewSubmission { view, user } = sent else {
            panic!("a view submission");
        };
        assert_eq!(view.input("answer", "text"), Some("hi"));
        assert_eq!(user.name(), "Slack user U1");
        let other: Interaction =
            serde_json::from_str(r#"{"type": "shortcut", "user": {"id": "U1"}}"#).unwrap();
        assert!(matches!(other, Interaction::Other));
    }
}
