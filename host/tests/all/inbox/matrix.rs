//! The inbox's Matrix channel against a real homeserver ([`Synapse`],
//! started per test on 127.0.0.1): real `inbox serve` and `ask` processes,
//! people reacting and replying in the room, a stranger in it, the inbox
//! killed in the middle, an encrypted room.

use super::{Inbox, answers_of, choice};

use ask_user_test_support::synapse::Synapse;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The reaction that chooses option `n` (from 1).
fn keycap(n: u8) -> String {
    format!("{n}\u{fe0f}\u{20e3}")
}

/// A one-user inbox whose questions go to `synapse`'s room, with the bot's
/// token in a file of mode 0600 (kept for the test's life by the inbox's
/// root).
fn matrix_inbox(synapse: &Synapse) -> (Inbox, tempfile::TempDir) {
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("matrix-token");
    std::fs::write(&token, format!("{}\n", synapse.bot.token)).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let inbox = Inbox::with_config(&format!(
        "[inbox.channels.matrix]\nhomeserver = \"{}\"\nroom = \"{}\"\naccess_token_file = \"{}\"\n\
         allow = [\"{}\"]\n",
        synapse.url,
        synapse.room,
        token.display(),
        synapse.ana.user,
    ));
    (inbox, secrets)
}

fn id(event: &Value) -> String {
    event["event_id"].as_str().unwrap().to_owned()
}

#[test]
fn a_question_is_answered_by_a_reaction_and_nobody_else_may_answer() {
    let synapse = Synapse::start();
    let (inbox, _secrets) = matrix_inbox(&synapse);
    let mut question = choice("Deploy <main> & tag?", &["staging", "production"]);
    question["questions"][0]["header"] = json!("Release");
    question["questions"][0]["options"][1]["description"] = json!("the <real> one");
    let agent = inbox.agent("s1", &question, &[]);
    let message = synapse.posted("Deploy <main> & tag?");
    let html = message["content"]["formatted_body"].as_str().unwrap();
    assert!(html.starts_with("<b>Release</b>"), "{html}");
    assert!(html.contains("Deploy &lt;main&gt; &amp; tag?"), "{html}");
    assert!(
        html.contains("2. <b>production</b> — the &lt;real&gt; one"),
        "{html}"
    );
    let body = message["content"]["body"].as_str().unwrap();
    assert!(body.contains("session s1"), "{body}");
    assert!(body.contains("React with 1️⃣–2️⃣"), "{body}");

    // Someone not in `allow` is told so, and nothing changes.
    let stranger = synapse.react(&synapse.mallory, &id(&message), &keycap(2));
    let told = synapse.told(&stranger);
    assert!(told.contains("not in this inbox's allow list"), "{told}");
    let stranger = synapse.reply(&synapse.mallory, &id(&message), "2");
    assert!(synapse.told(&stranger).contains("allow list"));
    // A reaction that is no number says nothing; a number past the options
    // is refused, saying which there are.
    synapse.react(&synapse.ana, &id(&message), "👍");
    let wrong = synapse.reply(&synapse.ana, &id(&message), "3");
    assert_eq!(
        synapse.told(&wrong),
        "There is no option 3: the options are 1 to 2."
    );
    assert_eq!(inbox.list(false).len(), 1, "the question still waits");

    let chosen = synapse.react(&synapse.ana, &id(&message), &keycap(2));
    assert_eq!(synapse.told(&chosen), "Answered.");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["production"]}])
    );
    let after = synapse.edited(&id(&message), "Answered in Matrix by @ana:localhost");
    assert!(
        after["formatted_body"]
            .as_str()
            .unwrap()
            .contains("<b>Answered in Matrix by @ana:localhost</b>: production"),
        "{after}"
    );
    let listed = inbox.wait_for("the question answered", true, |q| q["state"] == "answered");
    assert_eq!(listed["settledBy"], "matrix");
    assert_eq!(listed["answeredBy"], "@ana:localhost");

    // The token is in no log.
    let log = inbox.log();
    assert!(
        log.contains("the inbox serves") && !log.contains(&synapse.bot.token),
        "{log}"
    );
}

#[test]
fn a_batch_takes_numbers_own_words_and_a_skip_and_a_restart_loses_nothing() {
    let synapse = Synapse::start();
    let (mut inbox, _secrets) = matrix_inbox(&synapse);
    let batch = json!({"questions": [
        {"id": "a", "question": "Which checks?", "multiSelect": true,
         "options": [{"label": "Tests"}, {"label": "Lint"}, {"label": "Docs"}]},
        {"id": "b", "question": "Anything else?"},
        {"id": "c", "question": "Which day?", "options": [{"label": "Mon"}, {"label": "Tue"}]},
    ]});
    let agent = inbox.agent("s2", &batch, &[]);
    let first = synapse.posted("Which checks?");
    let second = synapse.posted("Anything else?");
    let third = synapse.posted("Which day?");
    assert!(
        first["content"]["body"]
            .as_str()
            .unwrap()
            .contains("Reply with the numbers of your choices (1, 3)"),
        "{first}"
    );
    let reacted = synapse.react(&synapse.ana, &id(&first), &keycap(1));
    assert!(synapse.told(&reacted).starts_with("Reply with the numbers"));
    let picked = synapse.reply(&synapse.ana, &id(&first), "3, 1");
    assert_eq!(
        synapse.told(&picked),
        "Noted; 2 more to answer before it is sent."
    );
    synapse.edited(&id(&first), "Your answer: Tests, Docs");

    inbox.kill9();
    // Written while the inbox is down: the room keeps it.
    let words = synapse.reply(&synapse.ana, &id(&second), "ship it <b>friday</b>");
    let skipped = synapse.reply(&synapse.ana, &id(&third), "skip");
    inbox.serve();
    assert_eq!(
        synapse.told(&words),
        "Noted; 1 more to answer before it is sent."
    );
    assert_eq!(synapse.told(&skipped), "Answered.");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([
            {"id": "a", "selected": ["Tests", "Docs"]},
            {"id": "b", "selected": [], "custom": "ship it <b>friday</b>"},
            {"id": "c", "selected": []},
        ])
    );
    synapse.edited(&id(&third), "Answered in Matrix");
    let questions = synapse
        .events()
        .iter()
        .filter(|e| {
            e["sender"] == synapse.bot.user.as_str()
                && e["content"]["msgtype"] == "m.text"
                && e["content"]["m.relates_to"].is_null()
        })
        .count();
    assert_eq!(questions, 3, "each question posted once");
}

#[test]
fn an_encrypted_room_is_refused_saying_why_and_the_inbox_serves_on() {
    let synapse = Synapse::start();
    let room = synapse.room.clone();
    synapse.call(
        &synapse.bot,
        "PUT",
        &format!(
            "/rooms/{}/state/m.room.encryption/",
            room.replace('!', "%21").replace(':', "%3A")
        ),
        Some(json!({"algorithm": "m.megolm.v1.aes-sha2"})),
    );
    let (inbox, _secrets) = matrix_inbox(&synapse);
    let start = Instant::now();
    while !inbox.log().contains("end-to-end encrypted") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the log never said why: {}",
            inbox.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = inbox.log();
    assert!(log.contains("matrix: the channel cannot start"), "{log}");
    // The page and the command still answer.
    let agent = inbox.agent("s3", &choice("Still there?", &["Yes", "No"]), &[]);
    let waiting = inbox.wait_for("the question", false, |_| true);
    let answered = inbox.answer(
        waiting["id"].as_str().unwrap(),
        &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}),
    );
    assert!(answered.status.success(), "{}", super::stderr(&answered));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
}
