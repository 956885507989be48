//! The inbox's two-way ntfy channel against an ntfy server of ours on
//! 127.0.0.1 ([`FakeNtfy`]): real `inbox serve` and `ask` processes, the
//! phone tapping a notification's buttons, strangers posting to the reply
//! topic, the inbox killed in the middle, the server down at start.

use super::{Inbox, answers_of, choice};

use ask_user_test_support::fake_ntfy::{FakeNtfy, Published};

use serde_json::{Value, json};

const TOPIC: &str = "ask-test-3k9x";
const REPLIES: &str = "ask-test-3k9x-replies";

fn ntfy_inbox(ntfy: &FakeNtfy) -> Inbox {
    Inbox::with_config(&format!(
        "[inbox.channels.ntfy]\ntopic = \"{}/{TOPIC}\"\n",
        ntfy.url
    ))
}

/// The body of `message`'s action `label`, as JSON.
fn body(message: &Published, label: &str) -> Value {
    let action = message
        .actions
        .iter()
        .find(|a| a["label"] == label)
        .unwrap_or_else(|| panic!("no {label:?} in {message:#?}"));
    serde_json::from_str(action["body"].as_str().unwrap()).unwrap()
}

#[test]
fn a_signed_button_answers_and_a_stranger_posting_to_the_reply_topic_answers_nothing() {
    let ntfy = FakeNtfy::start();
    let inbox = ntfy_inbox(&ntfy);
    let agent = inbox.agent("s1", &choice("Merge <it>?", &["Yes", "No"]), &[]);
    let message = ntfy.message(TOPIC, "Merge <it>?");
    let labels: Vec<&str> = message
        .actions
        .iter()
        .map(|a| a["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Yes", "No"]);
    for action in &message.actions {
        assert_eq!(action["url"], format!("{}/{REPLIES}", ntfy.url));
        assert_eq!(action["method"], "POST");
    }

    // Anyone can post to the topic: nothing they post answers. Each forgery
    // would answer "Yes"; the tap after them answers "No".
    let mut switched = body(&message, "No");
    switched["o"] = json!(0);
    let mut unsigned = body(&message, "Yes");
    unsigned["m"] = json!("00".repeat(32));
    for forged in [
        "Yes".to_owned(),
        switched.to_string(),
        unsigned.to_string(),
        json!({"k": 0, "q": 0, "o": 0}).to_string(),
    ] {
        ntfy.post(REPLIES, &forged);
    }
    ntfy.tap(&message, "No");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["No"]}])
    );
    let listed = inbox.wait_for("the answer", true, |q| q["state"] == "answered");
    assert_eq!(listed["settledBy"], "ntfy");
    // The "Yes" tapped too late (or replayed) changes nothing.
    ntfy.tap(&message, "Yes");
    let after = ntfy.message(TOPIC, "Answered in ntfy");
    assert!(after.message.contains("Merge <it>?: No"), "{after:#?}");
    assert!(after.actions.is_empty());
    let listed = inbox.wait_for("the answer kept", true, |q| q["state"] == "answered");
    assert_eq!(
        listed["outcome"]["value"]["answers"][0]["selected"],
        json!(["No"])
    );
}

#[test]
fn a_batch_of_choices_is_sent_once_each_is_tapped_and_other_batches_open_the_page() {
    let ntfy = FakeNtfy::start();
    let inbox = ntfy_inbox(&ntfy);
    let batch = json!({"questions": [
        {"id": "a", "question": "First?", "options": [{"label": "A1"}, {"label": "A2"}]},
        {"id": "b", "question": "Second?", "header": "Pick", "options": [{"label": "B1"}, {"label": "B2"}, {"label": "B3"}]},
    ]});
    let agent = inbox.agent("s2", &batch, &[]);
    let first = ntfy.message(TOPIC, "First?");
    let second = ntfy.message(TOPIC, "Second?");
    assert_eq!(second.title, "Pick (2 of 2)");
    ntfy.tap(&second, "B3");
    ntfy.tap(&first, "A1");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "a", "selected": ["A1"]}, {"id": "b", "selected": ["B3"]}])
    );

    // Several choices (or own words, or four options): the page.
    let mut multi = choice("Which parts?", &["Tests", "Docs"]);
    multi["questions"][0]["multiSelect"] = json!(true);
    let _agent = inbox.agent("s3", &multi, &[]);
    let link = ntfy.message(TOPIC, "Which parts?");
    assert_eq!(link.actions.len(), 1);
    assert_eq!(link.actions[0]["action"], "view");
    let url = link.actions[0]["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && !url.contains('?'),
        "no way in: {url}"
    );
}

#[test]
fn a_restart_loses_no_tap_and_posts_nothing_twice() {
    let ntfy = FakeNtfy::start();
    let mut inbox = ntfy_inbox(&ntfy);
    let batch = json!({"questions": [
        {"id": "a", "question": "First?", "options": [{"label": "A1"}, {"label": "A2"}]},
        {"id": "b", "question": "Second?", "options": [{"label": "B1"}, {"label": "B2"}]},
    ]});
    let agent = inbox.agent("s4", &batch, &[]);
    let first = ntfy.message(TOPIC, "First?");
    let second = ntfy.message(TOPIC, "Second?");
    ntfy.tap(&first, "A2");
    // Kept once the inbox read it: wait for its state to say so.
    inbox.wait_until("the first tap kept", false, |_| {
        let database = rusqlite::Connection::open_with_flags(
            inbox.state().join("inbox.sqlite"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .ok()?;
        let state: String = database
            .query_row(
                "SELECT value FROM settings WHERE key = 'channel:ntfy'",
                [],
                |row| row.get(0),
            )
            .ok()?;
        state.contains(r#""selected":["A2"]"#).then_some(())
    });
    inbox.kill9();
    // Tapped while the inbox is down: the server keeps it.
    ntfy.tap(&second, "B1");
    inbox.serve();
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "a", "selected": ["A2"]}, {"id": "b", "selected": ["B1"]}])
    );
    let questions: Vec<Published> = ntfy
        .messages(TOPIC)
        .into_iter()
        .filter(|m| !m.actions.is_empty())
        .collect();
    assert_eq!(questions.len(), 2, "each posted once: {questions:#?}");
}

#[test]
fn the_server_down_at_start_is_waited_out() {
    let ntfy = FakeNtfy::start();
    ntfy.set_down(true);
    let inbox = ntfy_inbox(&ntfy);
    let agent = inbox.agent("s5", &choice("Still there?", &["Yes", "No"]), &[]);
    inbox.wait_for("the question", false, |_| true);
    ntfy.set_down(false);
    let message = ntfy.message(TOPIC, "Still there?");
    ntfy.tap(&message, "Yes");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
    assert!(inbox.log().contains("ntfy"), "the failure is reported");
}
