//! The inbox's Matrix channel against a real homeserver ([`Synapse`],
//! started per test on 127.0.0.1): real `inbox serve` and `ask` processes,
//! people reacting and replying in the room, a stranger in it, the inbox
//! killed in the middle, an encrypted room.

use super::suite::{self, Service, Who};
use super::{Inbox, answers_of, choice};

use ask_user_test_support::fault_proxy::{Fault, FaultProxy};
use ask_user_test_support::synapse::Synapse;

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

/// The reaction that chooses option `n` (from 1).
fn keycap(n: u8) -> String {
    format!("{n}\u{fe0f}\u{20e3}")
}

/// A one-user inbox whose questions go to `synapse`'s room, reached at
/// `homeserver` (its own address, or a proxy's), with the bot's token in a
/// file of mode 0600 (kept for the test's life by the inbox's root).
fn matrix_inbox(synapse: &Synapse, homeserver: &str) -> (Inbox, tempfile::TempDir) {
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("matrix-token");
    std::fs::write(&token, format!("{}\n", synapse.bot.token)).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let inbox = Inbox::with_config(&format!(
        "[inbox.channels.matrix]\nhomeserver = \"{}\"\nroom = \"{}\"\naccess_token_file = \"{}\"\n\
         allow = [\"{}\"]\n",
        homeserver,
        synapse.room,
        token.display(),
        synapse.ana.user,
    ));
    (inbox, secrets)
}

fn id(event: &Value) -> String {
    event["event_id"].as_str().unwrap().to_owned()
}

/// Matrix, for the chat channels' suite: people react with an option's
/// number, and reply with numbers, `skip` or their own words; the bot's
/// notice in reply says what became of each. The inbox reaches Synapse
/// through a proxy that fails as Synapse would, on cue.
struct Matrix(Synapse, FaultProxy);

/// The path of a question's message: sent in a transaction of its own
/// (`ask-user.{record}.{question}`), where notices and edits have random
/// ones.
const POST: &str = "/send/m.room.message/ask-user.";

impl Matrix {
    fn account(&self, who: Who) -> &ask_user_test_support::synapse::Account {
        match who {
            Who::Allowed => &self.0.ana,
            Who::Stranger => &self.0.mallory,
        }
    }
}

impl Service for Matrix {
    const TITLE: &'static str = "Matrix";
    type Shown = Value;
    /// The event a person sent: the bot's notice replies to it.
    type Act = String;

    fn start() -> (Self, Inbox, tempfile::TempDir) {
        let synapse = Synapse::start();
        let proxy = FaultProxy::start(&synapse.url);
        let (inbox, secrets) = matrix_inbox(&synapse, &proxy.url);
        (Matrix(synapse, proxy), inbox, secrets)
    }

    fn shown(&self, text: &str) -> Value {
        self.0.posted(text)
    }

    /// One: a reaction with its number; several: their numbers in a reply.
    fn choose(&self, who: Who, shown: &Value, labels: &[&str]) -> String {
        let body = shown["content"]["body"].as_str().unwrap();
        let numbers: Vec<u8> = labels
            .iter()
            .map(|label| {
                (1..=10)
                    .find(|n| body.contains(&format!("\n{n}. {label}")))
                    .unwrap_or_else(|| panic!("no option {label} in {body}"))
            })
            .collect();
        let account = self.account(who);
        match numbers.as_slice() {
            [one] if !body.contains("numbers of your choices") => {
                self.0.react(account, &id(shown), &keycap(*one))
            }
            numbers => {
                let numbers: Vec<String> = numbers.iter().map(u8::to_string).collect();
                self.0.reply(account, &id(shown), &numbers.join(", "))
            }
        }
    }

    fn own_words(&self, who: Who, shown: &Value, text: &str) -> String {
        self.0.reply(self.account(who), &id(shown), text)
    }

    fn skip(&self, who: Who, shown: &Value) -> String {
        self.0.reply(self.account(who), &id(shown), "skip")
    }

    fn told(&self, act: &String, text: &str) {
        let told = self.0.told(act);
        assert!(told.contains(text), "{told}");
    }

    fn says(&self, shown: &Value, text: &str) {
        self.0.edited(&id(shown), text);
    }

    /// A message has nothing to press: once edited, it is settled.
    fn settled(&self, shown: &Value, text: &str) {
        self.0.edited(&id(shown), text);
    }

    fn posts(&self) -> usize {
        let bot = self.0.bot.user.as_str();
        self.0
            .events()
            .iter()
            .filter(|e| {
                e["sender"] == bot
                    && e["content"]["msgtype"] == "m.text"
                    && e["content"]["m.relates_to"].is_null()
            })
            .count()
    }

    fn set_down(&self, down: bool) {
        self.1.set_down(down);
    }

    /// Synapse says how long in `retry_after_ms`.
    fn throttle_next_post(&self, seconds: u64) {
        let body = json!({"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests",
            "retry_after_ms": seconds * 1000});
        let fault = Fault {
            status: 429,
            body: body.to_string(),
            retry_after: None,
        };
        self.1.next(POST, fault);
    }

    /// As Synapse refuses an event over its size limit.
    fn refuse_posts_with(&self, text: &str) {
        let body = json!({"errcode": "M_TOO_LARGE", "error": "event too large"});
        let fault = Fault {
            status: 413,
            body: body.to_string(),
            retry_after: None,
        };
        self.1.always(text, fault);
    }

    fn calls(&self) -> Vec<suite::Call> {
        let asked = self.1.asked("").into_iter();
        asked
            .map(|asked| suite::Call {
                at: asked.at,
                post: asked.path.contains(POST),
                status: asked.status,
            })
            .collect()
    }
}

suite::suite!(super::Matrix);

#[test]
fn a_question_is_answered_by_a_reaction_and_nobody_else_may_answer() {
    let synapse = Synapse::start();
    let (inbox, _secrets) = matrix_inbox(&synapse, &synapse.url);
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
fn several_choices_are_numbers_in_a_reply_and_a_reaction_is_told_so() {
    let synapse = Synapse::start();
    let (inbox, _secrets) = matrix_inbox(&synapse, &synapse.url);
    let question = json!({"questions": [
        {"id": "q", "question": "Which checks?", "multiSelect": true,
         "options": [{"label": "Tests"}, {"label": "Lint"}, {"label": "Docs"}]},
    ]});
    let agent = inbox.agent("s2", &question, &[]);
    let message = synapse.posted("Which checks?");
    let body = message["content"]["body"].as_str().unwrap();
    assert!(
        body.contains("Reply with the numbers of your choices (1, 3)"),
        "{body}"
    );
    let reacted = synapse.react(&synapse.ana, &id(&message), &keycap(1));
    assert!(
        synapse
            .told(&reacted)
            .starts_with("Reply with the numbers of your choices"),
        "{}",
        synapse.told(&reacted)
    );
    let picked = synapse.reply(&synapse.ana, &id(&message), "3, 1");
    assert_eq!(synapse.told(&picked), "Answered.");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Tests", "Docs"]}])
    );
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
    let (inbox, _secrets) = matrix_inbox(&synapse, &synapse.url);
    let log = inbox.said("end-to-end encrypted");
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
