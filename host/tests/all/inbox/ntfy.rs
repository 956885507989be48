//! The inbox's two-way ntfy channel against an ntfy server of ours on
//! 127.0.0.1 ([`FakeNtfy`]): real `inbox serve` and `ask` processes, the
//! phone tapping a notification's buttons, strangers posting to the reply
//! topic, the inbox killed in the middle, the server down at start; and
//! `inbox phone`, which sets a phone up for it.

use super::{Inbox, answers_of, ask_user, choice, stderr};

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

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
    // It replaces the question's notification, buttons and all.
    assert!(message.sequence_id.is_some(), "{message:#?}");
    assert_eq!(after.sequence_id, message.sequence_id);
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
    // Each question's notification is updated in place with its answer.
    for (asked, said) in [(&first, "First?: A1"), (&second, "Second?: B3")] {
        let update = ntfy.message(TOPIC, said);
        assert_ne!(update.id, asked.id);
        assert_eq!(update.sequence_id, asked.sequence_id, "{update:#?}");
        assert!(update.actions.is_empty(), "{update:#?}");
    }
    assert_ne!(first.sequence_id, second.sequence_id);

    // Several choices (or own words, or four options): the page. This
    // inbox's is on 127.0.0.1, which a phone never reaches: the notice
    // says where to answer instead, and links nothing.
    let mut multi = choice("Which parts?", &["Tests", "Docs"]);
    multi["questions"][0]["multiSelect"] = json!(true);
    let _agent = inbox.agent("s3", &multi, &[]);
    let here = ntfy.message(TOPIC, "Which parts?");
    assert!(here.actions.is_empty() && here.click.is_none(), "{here:#?}");
    assert!(
        here.message.contains("Answer at your computer"),
        "{here:#?}"
    );
    assert!(
        first.click.is_none(),
        "a button's notification links nothing either: {first:#?}"
    );

    // With an address a phone can open (`public_url`): a button to it,
    // with no way in.
    let public = Inbox::with_config(&format!(
        "[inbox]\npublic_url = \"https://inbox.example.com\"\n\n\
         [inbox.channels.ntfy]\ntopic = \"{}/{TOPIC}-public\"\n",
        ntfy.url
    ));
    let _agent = public.agent("s4", &multi, &[]);
    let link = ntfy.message(&format!("{TOPIC}-public"), "Which parts?");
    assert_eq!(link.actions.len(), 1);
    assert_eq!(link.actions[0]["action"], "view");
    assert_eq!(link.actions[0]["url"], "https://inbox.example.com");
    assert_eq!(link.click.as_deref(), Some("https://inbox.example.com"));
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

/// `inbox phone` in a home with no config: a fresh topic is written into a
/// new, private config file; the phone is shown the topic's name and a QR
/// code; the test notification's press comes back; run again, it keeps
/// the topic; and the inbox with that file answers through it.
#[test]
fn a_phone_is_set_up_by_one_command_and_answers_through_its_topic() {
    let ntfy = FakeNtfy::start();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("ask-user/config.toml");
    let mut phone = ask_user()
        .env("XDG_CONFIG_HOME", home.path())
        .args(["inbox", "phone", "--server", &ntfy.url, "--wait", "60s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(phone.stdout.take().unwrap()).lines();
    let first = out.next().unwrap().unwrap();
    let topic = first
        .split_whitespace()
        .find(|word| word.starts_with("ask-"))
        .unwrap_or_else(|| panic!("no topic named: {first}"))
        .trim_end_matches(',')
        .to_owned();
    assert_eq!(topic.len(), "ask-".len() + 32, "128 random bits: {topic}");
    let test = ntfy.message(&topic, "Press the button");
    ntfy.tap(&test, "It works");
    let said: Vec<String> = out.map(Result::unwrap).collect();
    let said = said.join("\n");
    let status = phone.wait().unwrap();
    assert!(status.success(), "{said}");
    assert!(
        said.contains(&format!("subscribe (+) to the topic {topic}")),
        "{said}"
    );
    assert!(
        said.contains('█') && said.contains('▀'),
        "a QR code: {said}"
    );
    assert!(
        said.contains("It works: your phone's press came back"),
        "{said}"
    );
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(
        written.contains(&format!(
            "[inbox.channels.ntfy]\ntopic = \"{}/{topic}\"",
            ntfy.url
        )),
        "{written}"
    );
    let mode = std::fs::metadata(&config).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the topic is a secret");

    // Again: the topic is kept, and nothing is added.
    let again = ask_user()
        .env("XDG_CONFIG_HOME", home.path())
        .args(["inbox", "phone", "--wait", "0"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    let again = String::from_utf8(again.stdout).unwrap();
    assert!(
        again.contains(&format!("already has a phone's topic: {topic}")),
        "{again}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), written);

    // A table that names an access token: the test is sent with it.
    let with_token = home.path().join("with-token.toml");
    std::fs::write(
        &with_token,
        format!("{written}token_env = \"ASK_USER_TEST_NTFY_TOKEN\"\n"),
    )
    .unwrap();
    let tested = ask_user()
        .env("ASK_USER_TEST_NTFY_TOKEN", "tk_phone")
        .args(["inbox", "phone", "--wait", "1s", "--config"])
        .arg(&with_token)
        .output()
        .unwrap();
    assert!(!tested.status.success(), "nobody pressed this one");
    let sent = ntfy.messages(&topic);
    assert_eq!(
        sent.last().unwrap().token.as_deref(),
        Some("tk_phone"),
        "{sent:#?}"
    );

    // The inbox with that file: a question's button, pressed, answers.
    let inbox = Inbox::with_config(&written);
    let agent = inbox.agent("s-phone", &choice("Deploy now?", &["Yes", "No"]), &[]);
    let asked = ntfy.message(&topic, "Deploy now?");
    ntfy.tap(&asked, "Yes");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
}

/// A server that is no address is refused, and no file is made; a test
/// nobody presses ends the command with why and what to check, the topic
/// kept.
#[test]
fn a_phone_setup_says_what_went_wrong() {
    let ntfy = FakeNtfy::start();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("ask-user/config.toml");
    let phone = |args: &[&str]| {
        ask_user()
            .env("XDG_CONFIG_HOME", home.path())
            .args(["inbox", "phone"])
            .args(args)
            .output()
            .unwrap()
    };
    let refused = phone(&["--server", "ntfy.sh/mine"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("is not a server's address"),
        "{}",
        stderr(&refused)
    );
    assert!(!config.exists());

    let unpressed = phone(&["--server", &ntfy.url, "--wait", "1s"]);
    assert_eq!(unpressed.status.code(), Some(2), "{}", stderr(&unpressed));
    let why = stderr(&unpressed);
    assert!(
        why.contains("nobody pressed \"It works\" within 1s")
            && why.contains("is the app subscribed"),
        "{why}"
    );
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("[inbox.channels.ntfy]")
    );
}

/// `[inbox] notify_after` holds a two-way channel's posts too: a question
/// answered within it is never posted; one still waiting then is.
#[test]
fn with_notify_after_a_question_answered_first_is_never_posted() {
    let ntfy = FakeNtfy::start();
    let inbox = Inbox::with_config(&format!(
        "[inbox]\nnotify_after = \"2s\"\n\n[inbox.channels.ntfy]\ntopic = \"{}/{TOPIC}\"\n",
        ntfy.url
    ));
    inbox.answered_at_once("Quick one?");
    let agent = inbox.agent("s2", &choice("Slow one?", &["Yes", "No"]), &[]);
    let message = ntfy.message(TOPIC, "Slow one?");
    let posted: Vec<String> = ntfy
        .messages(TOPIC)
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert!(
        posted.iter().all(|text| !text.contains("Quick one?")),
        "the quick one was due first, and never posted: {posted:?}"
    );
    ntfy.tap(&message, "Yes");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
}

/// `ntfy =` in `[inbox.notify]` (one way): the question's notice carries
/// its id as its sequence, and once it is answered elsewhere (here from the
/// command line) the notice is updated in place to say so.
#[test]
fn a_one_way_notice_is_updated_in_place_when_its_question_is_answered_elsewhere() {
    let ntfy = FakeNtfy::start();
    let inbox = Inbox::with_config(&format!(
        "[inbox.notify]\nntfy = \"{}/{TOPIC}\"\n",
        ntfy.url
    ));
    let agent = inbox.agent("s1", &choice("Merge it?", &["Yes", "No"]), &[]);
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let id = asked["id"].as_str().unwrap();
    let notice = ntfy.message(TOPIC, "Merge it?");
    assert_eq!(notice.sequence_id.as_deref(), Some(id), "{notice:#?}");
    let answered = inbox.answer(id, &json!({"answers": [{"id": "q", "selected": ["No"]}]}));
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["No"]}])
    );
    let update = ntfy.message(TOPIC, "Answered from the command line");
    assert_eq!(update.sequence_id.as_deref(), Some(id), "{update:#?}");
    assert!(update.message.contains("Merge it?"), "{update:#?}");
    assert_eq!(ntfy.messages(TOPIC).len(), 2, "one notice, one update");
}
