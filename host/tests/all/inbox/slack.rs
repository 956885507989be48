//! The inbox's Slack channel against a Slack of ours on 127.0.0.1
//! ([`FakeSlack`]: its Web API and a Socket Mode WebSocket; no machine here
//! reaches Slack): real `inbox serve` and `ask` processes, people pressing
//! buttons, ticking checkboxes and sending the own-words modal, the inbox
//! killed in the middle, Slack down and throttled and a message it
//! refuses (the suite).

use super::suite::{self, Service, Who};
use super::{Inbox, answers_of, choice};

use ask_user_test_support::fake_slack::{
    ANA, APP_TOKEN, BOT_TOKEN, CHANNEL, FakeSlack, MALLORY, Person, Posted,
};

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

/// A one-user inbox whose questions go to `slack`, its tokens in files of
/// mode 0600.
fn slack_inbox(slack: &FakeSlack) -> (Inbox, tempfile::TempDir) {
    let secrets = tempfile::tempdir().unwrap();
    let file = |name: &str, token: &str| {
        let path = secrets.path().join(name);
        std::fs::write(&path, token).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    };
    let (app, bot) = (file("app", APP_TOKEN), file("bot", BOT_TOKEN));
    let inbox = Inbox::with_config(&format!(
        "[inbox.channels.slack]\napp_token_file = {:?}\nbot_token_file = {:?}\nchannel = \"{CHANNEL}\"\n\
         allow = [\"{}\"]\napi_url = \"{}\"\n",
        app.display().to_string(),
        bot.display().to_string(),
        ANA.id,
        slack.url,
    ));
    (inbox, secrets)
}

/// Slack, for the chat channels' suite: a person presses buttons, ticks
/// checkboxes, and sends the own-words modal; what they are told reaches
/// them alone.
struct Slack(FakeSlack);

fn person(who: Who) -> Person {
    match who {
        Who::Allowed => ANA,
        Who::Stranger => MALLORY,
    }
}

impl Service for Slack {
    const TITLE: &'static str = "Slack";
    type Shown = Posted;
    /// Who did it: Slack tells each person apart.
    type Act = Person;

    fn start() -> (Self, Inbox, tempfile::TempDir) {
        let slack = FakeSlack::start();
        let (inbox, secrets) = slack_inbox(&slack);
        (Slack(slack), inbox, secrets)
    }

    fn shown(&self, text: &str) -> Posted {
        posted(&self.0, text)
    }

    /// Several: the checkboxes ticked, then Send.
    fn choose(&self, who: Who, shown: &Posted, labels: &[&str]) -> Person {
        let person = person(who);
        let checkboxes = shown
            .elements()
            .into_iter()
            .find(|e| e["type"] == "checkboxes");
        match checkboxes {
            None => self.0.press(person, shown, &shown.button(labels[0])),
            Some(checkboxes) => {
                self.0.tick(person, shown, &checkboxes, labels);
                self.0.press(person, shown, &shown.button("Send"));
            }
        }
        person
    }

    fn own_words(&self, who: Who, shown: &Posted, text: &str) -> Person {
        let person = person(who);
        self.0
            .press(person, shown, &shown.button("Type your own answer"));
        let modal = self.0.modal();
        self.0.submit(person, &modal, text);
        person
    }

    fn skip(&self, who: Who, shown: &Posted) -> Person {
        let person = person(who);
        self.0.press(person, shown, &shown.button("Skip"));
        person
    }

    fn told(&self, person: &Person, text: &str) {
        self.0.told(*person, text);
    }

    fn says(&self, shown: &Posted, text: &str) {
        updated(&self.0, &shown.ts, text);
    }

    fn settled(&self, shown: &Posted, text: &str) {
        let after = updated(&self.0, &shown.ts, text);
        assert!(after.elements().is_empty(), "the buttons go: {after:?}");
    }

    fn posts(&self) -> usize {
        self.0.posts()
    }

    fn set_down(&self, down: bool) {
        self.0.set_down(down);
    }

    /// Slack says how long in `Retry-After`.
    fn throttle_next_post(&self, seconds: u64) {
        self.0.throttle("chat.postMessage", 1, seconds);
    }

    fn refuse_posts_with(&self, text: &str) {
        self.0.refuse(text);
    }

    fn calls(&self) -> Vec<suite::Call> {
        let calls = self.0.all_calls().into_iter();
        calls
            .map(|(method, at, status)| suite::Call {
                at,
                post: method == "chat.postMessage",
                status,
            })
            .collect()
    }
}

suite::suite!(super::Slack);

/// The question `text` posted, with its buttons.
fn posted(slack: &FakeSlack, text: &str) -> Posted {
    slack.message(text, |m| !m.elements().is_empty())
}

/// Message `ts` once it shows `text`.
fn updated(slack: &FakeSlack, ts: &str, text: &str) -> Posted {
    slack.message(text, |m| m.ts == ts)
}

#[test]
fn a_question_is_answered_by_a_button_and_nobody_else_may_press_one() {
    let slack = FakeSlack::start();
    let (inbox, _secrets) = slack_inbox(&slack);
    let mut question = choice(
        "Deploy <!channel> & <https://evil|here>?",
        &["staging", "production"],
    );
    question["questions"][0]["header"] = json!("Release");
    let agent = inbox.agent("s1", &question, &[]);
    let message = posted(
        &slack,
        "Deploy &lt;!channel&gt; &amp; &lt;https://evil|here&gt;?",
    );
    assert!(
        message.shown().starts_with("*Release*"),
        "{}",
        message.shown()
    );
    // The plain text, which notifications show, is escaped too, and no
    // mrkdwn text makes links or mentions of its own.
    let escaped = "Deploy &lt;!channel&gt; &amp; &lt;https://evil|here&gt;?";
    assert_eq!(message.text, escaped);
    let mrkdwn: Vec<&Value> = message
        .blocks
        .iter()
        .flat_map(|b| {
            std::iter::once(&b["text"]).chain(b["elements"].as_array().into_iter().flatten())
        })
        .filter(|t| t["type"] == "mrkdwn")
        .collect();
    assert!(
        mrkdwn.len() >= 2 && mrkdwn.iter().all(|t| t["verbatim"] == true),
        "{mrkdwn:?}"
    );
    let buttons: Vec<String> = message
        .elements()
        .iter()
        .map(|e| e["text"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        buttons,
        ["staging", "production", "✍ Type your own answer", "Skip"]
    );

    slack.press(MALLORY, &message, &message.button("production"));
    slack.told(MALLORY, "not in this inbox's allow list");
    assert_eq!(inbox.list(false).len(), 1, "the question still waits");

    slack.press(ANA, &message, &message.button("production"));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["production"]}])
    );
    let after = updated(
        &slack,
        &message.ts,
        "*Answered in Slack by @ana*: production",
    );
    assert!(after.elements().is_empty(), "the buttons go: {after:#?}");
    assert_eq!(after.text, escaped);
    slack.all_acked();
    let listed = inbox.wait_for("the answer", true, |q| q["state"] == "answered");
    assert_eq!(listed["settledBy"], "slack");
    assert_eq!(listed["answeredBy"], "@ana");
    let log = inbox.log();
    assert!(
        !log.contains(APP_TOKEN) && !log.contains(BOT_TOKEN),
        "{log}"
    );
}

#[test]
fn a_batch_takes_checkboxes_own_words_in_a_modal_and_a_skip() {
    let slack = FakeSlack::start();
    let (inbox, _secrets) = slack_inbox(&slack);
    let batch = json!({"questions": [
        {"id": "parts", "question": "What goes in?", "multiSelect": true, "options": [
            {"label": "Tests"}, {"label": "Docs"}, {"label": "Bench"}]},
        {"id": "notes", "question": "Anything else?"},
        {"id": "when", "question": "When?", "options": [{"label": "Now"}, {"label": "Later"}]},
    ]});
    let agent = inbox.agent("s2", &batch, &[]);
    let parts = posted(&slack, "What goes in?");
    let notes = posted(&slack, "Anything else?");
    let when = posted(&slack, "When?");
    assert!(
        parts.shown().contains("question 1 of 3"),
        "{}",
        parts.shown()
    );

    let checkboxes = parts
        .elements()
        .into_iter()
        .find(|e| e["type"] == "checkboxes")
        .unwrap();
    slack.tick(ANA, &parts, &checkboxes, &["Tests", "Bench"]);
    slack.tick(ANA, &parts, &checkboxes, &["Bench"]);
    slack.press(ANA, &parts, &parts.button("Send"));
    slack.told(ANA, "Noted; 2 more to answer before it is sent.");
    updated(&slack, &parts.ts, "*Your answer:* Bench");

    slack.press(ANA, &notes, &notes.button("Type your own answer"));
    let modal = slack.modal();
    assert_eq!(modal["callback_id"], "ask-user-own-words");
    slack.submit(ANA, &modal, "ship it <now>");
    slack.told(ANA, "Noted; 1 more to answer before it is sent.");

    slack.press(ANA, &when, &when.button("Skip"));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([
            {"id": "parts", "selected": ["Bench"]},
            {"id": "notes", "selected": [], "custom": "ship it <now>"},
            {"id": "when", "selected": []},
        ])
    );
    updated(&slack, &notes.ts, "by @ana*: “ship it &lt;now&gt;”");
    updated(&slack, &when.ts, "by @ana*: skipped");
    slack.all_acked();
}
