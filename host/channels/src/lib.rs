//! The ask-user inbox's channels: where the human hears that an agent
//! waits, and, for a two-way channel, answers it there. Each is a kind the
//! inbox's registry takes ([`register`]), meeting the contract in
//! [`ask_user_inbox::notify`]:
//!
//! | kind | config | what it does |
//! |---|---|---|
//! | `desktop` | `desktop = true` | a notification on this machine, with a one-time link |
//! | `ntfy` | `ntfy = "https://…"` or `[inbox.channels.ntfy]` | a notification; with a table, signed answer buttons |
//! | `webhook` | `webhook = "https://…"` | JSON to a URL |
//! | `telegram` | `[inbox.channels.telegram]` | every question in a chat, answered there |
//! | `slack` | `[inbox.channels.slack]` | every question in a channel, answered there |
//! | `matrix` | `[inbox.channels.matrix]` | every question in a room, answered there |
//!
//! What the two-way channels share is here too, one concern a module:
//! `driver` (what runs a channel: shown, left, taken, with a backoff),
//! `chat` (a chat's messages, one per question), `batch` (answers
//! collected question by question), `press` (a button's data),
//! `kept` (state in the inbox's store), `people` (who answers),
//! `secret` (tokens), `text` (the model's words as a channel shows
//! them) and `http` (calls, bounded replies, 429s).
//!
//! A new channel is a module here, its line in [`register`], and its fake
//! (or real) service in the tests.
//!
//! [`ntfy_phone`] and [`telegram_phone`] set a phone up
//! (`ask-user inbox phone`).

mod batch;
mod chat;
mod desktop;
mod driver;
mod http;
mod kept;
mod matrix;
mod ntfy;
mod people;
mod press;
mod secret;
mod slack;
mod telegram;
mod text;
mod webhook;

pub use ntfy::phone as ntfy_phone;
pub use telegram::phone as telegram_phone;

use ask_user_inbox::notify::Channels;
#[cfg(test)]
use ask_user_inbox::store::{NewQuestion, Record};

/// Adds every channel of this crate to `channels`.
pub fn register(channels: &mut Channels) {
    channels.register(desktop::Desktop);
    channels.register(ntfy::Ntfy);
    channels.register(webhook::Webhook);
    channels.register(telegram::Telegram);
    channels.register(slack::Slack);
    channels.register(matrix::Matrix);
}

/// A registry of every channel of this crate.
pub fn builtin() -> Channels {
    let mut channels = Channels::new();
    register(&mut channels);
    channels
}

/// A waiting record of `request`, as the inbox's store gives it.
#[cfg(test)]
fn record_of(request: ask_user_seam::AskRequest) -> Record {
    let question = NewQuestion {
        session: "s1".into(),
        agent: "test".into(),
        cwd: Some("/work".into()),
        request,
        owner: None,
        audience: Vec::new(),
    };
    Record::asked("q-test".into(), question, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn each_key_names_a_channel_and_a_mistake_says_what_would_do() {
        let channels = builtin();
        assert_eq!(
            channels.names(),
            ["desktop", "ntfy", "webhook", "telegram", "slack", "matrix"]
        );
        let on = channels
            .configure(&table(
                "desktop = true\nwebhook = \"https://hooks.example/x\"",
            ))
            .unwrap();
        assert_eq!(on.names(), ["desktop", "webhook"]);
        assert!(
            channels
                .configure(&table("desktop = false"))
                .unwrap()
                .names()
                .is_empty()
        );
        let unknown = channels.configure(&table("discord = \"x\"")).unwrap_err();
        assert!(
            unknown.contains("no channel `discord`")
                && unknown.contains("desktop, ntfy, webhook, telegram, slack, matrix"),
            "{unknown}"
        );
        let wrong = channels.configure(&table("ntfy = 3")).unwrap_err();
        assert!(wrong.contains("ntfy: 3 is not an http"), "{wrong}");
        let wrong = channels.configure(&table("desktop = \"yes\"")).unwrap_err();
        assert!(wrong.contains("true or false"), "{wrong}");
        assert_eq!(on.title("telegram"), "Telegram");
        assert_eq!(on.title("gone"), "gone");
    }
}
