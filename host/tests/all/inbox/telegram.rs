//! The inbox's Telegram channel against a Bot API of ours on 127.0.0.1
//! ([`FakeTelegram`]: no machine here reaches Telegram): real `inbox serve`
//! and `ask` processes, a person pressing the bot's buttons and replying
//! to its prompts, the inbox killed in the middle, the service down and
//! throttled, a message it refuses (the suite), and what only Telegram
//! does: its markup, its limits, its updates.

use super::suite::{self, Service, Who};
use super::{Inbox, answers_of, choice, stderr};

use ask_user_test_support::fake_telegram::{
    ANA, BOT_USERNAME, FakeTelegram, MALLORY, Person, Sent, TOKEN,
};

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

/// A one-user inbox whose questions go to `telegram`, with the bot's token
/// in a file of mode 0600 (kept for the test's life by the inbox's root).
fn telegram_inbox(telegram: &FakeTelegram) -> (Inbox, tempfile::TempDir) {
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("telegram-token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let inbox = Inbox::with_config(&format!(
        "[inbox.channels.telegram]\ntoken_file = \"{}\"\nchat = {}\nallow = [{}]\napi_url = \"{}\"\n",
        token.display(),
        ask_user_test_support::fake_telegram::CHAT,
        ANA.id,
        telegram.url,
    ));
    (inbox, secrets)
}

/// Telegram, for the chat channels' suite: a person presses the bot's
/// buttons, and types own words as a reply to its prompt.
struct Telegram(FakeTelegram);

/// What a person did in Telegram.
enum Act {
    /// Pressed a button: the query the bot answers.
    Pressed(String),
    /// Replied to the bot's prompt: the bot says what became of it.
    Replied,
}

fn person(who: Who) -> Person {
    match who {
        Who::Allowed => ANA,
        Who::Stranger => MALLORY,
    }
}

impl Telegram {
    fn press(&self, who: Who, shown: &Sent, label: &str) -> String {
        self.0
            .press(person(who), shown.message_id, &shown.button(label))
    }
}

impl Service for Telegram {
    const TITLE: &'static str = "Telegram";
    type Shown = Sent;
    type Act = Act;

    fn start() -> (Self, Inbox, tempfile::TempDir) {
        let telegram = FakeTelegram::start();
        let (inbox, secrets) = telegram_inbox(&telegram);
        (Telegram(telegram), inbox, secrets)
    }

    fn shown(&self, text: &str) -> Sent {
        posted(&self.0, text)
    }

    /// Several: each ticked (its toast waited for), then Send.
    fn choose(&self, who: Who, shown: &Sent, labels: &[&str]) -> Act {
        if shown
            .buttons
            .iter()
            .flatten()
            .all(|(t, _)| !t.starts_with("Send"))
        {
            return Act::Pressed(self.press(who, shown, labels[0]));
        }
        for label in labels {
            let ticked = self.press(who, shown, label);
            self.0.told(&ticked);
        }
        Act::Pressed(self.press(who, shown, "Send"))
    }

    fn own_words(&self, who: Who, shown: &Sent, text: &str) -> Act {
        let asked = self.press(who, shown, "Type your own answer");
        self.0.told(&asked);
        let prompt = self
            .0
            .message("Reply to this message with your answer", |m| {
                m.force_reply && m.reply_to == Some(shown.message_id)
            });
        self.0.reply(person(who), prompt.message_id, text);
        Act::Replied
    }

    fn skip(&self, who: Who, shown: &Sent) -> Act {
        Act::Pressed(self.press(who, shown, "Skip"))
    }

    fn told(&self, act: &Act, text: &str) {
        match act {
            Act::Pressed(query) => {
                let told = self.0.told(query);
                assert!(told["text"].as_str().unwrap().contains(text), "{told}");
            }
            Act::Replied => {
                self.0.message(text, |m| !m.force_reply);
            }
        }
    }

    fn says(&self, shown: &Sent, text: &str) {
        edited(&self.0, shown.message_id, text);
    }

    fn settled(&self, shown: &Sent, text: &str) {
        let after = edited(&self.0, shown.message_id, text);
        assert!(after.buttons.is_empty(), "the keyboard goes: {after:?}");
    }

    fn posts(&self) -> usize {
        let calls = self.calls().into_iter();
        calls.filter(|call| call.post && call.status == 200).count()
    }

    fn set_down(&self, down: bool) {
        self.0.set_down(down);
    }

    /// Telegram says how long in the reply's `parameters.retry_after`.
    fn throttle_next_post(&self, seconds: u64) {
        self.0.throttle("sendMessage", 1, seconds);
    }

    fn refuse_posts_with(&self, text: &str) {
        self.0.refuse(text);
    }

    /// A question's message is the one with a keyboard.
    fn calls(&self) -> Vec<suite::Call> {
        let calls = self.0.all_calls().into_iter();
        calls
            .map(|call| suite::Call {
                at: call.at,
                post: call.method == "sendMessage"
                    && call.body["reply_markup"]["inline_keyboard"].is_array(),
                status: call.status,
            })
            .collect()
    }
}

suite::suite!(super::Telegram);

/// The question `text` is posted, with its keyboard.
fn posted(telegram: &FakeTelegram, text: &str) -> Sent {
    telegram.message(text, |m| !m.buttons.is_empty())
}

/// The message `id` once edited to contain `text`.
fn edited(telegram: &FakeTelegram, id: i64, text: &str) -> Sent {
    telegram.wait_for(&format!("message {id} to say {text:?}"), |sent| {
        sent.iter()
            .find(|m| m.message_id == id && m.text.contains(text))
            .cloned()
    })
}

#[test]
fn a_question_is_answered_by_a_button_and_nobody_else_may_press_one() {
    let telegram = FakeTelegram::start();
    let (inbox, _secrets) = telegram_inbox(&telegram);
    let mut question = choice("Deploy <main> & tag?", &["staging", "production"]);
    question["questions"][0]["header"] = json!("Release");
    question["questions"][0]["options"][1]["description"] = json!("the <real> one");
    let session = "claude-code-0b9d3c6e-2f41-4a7e-9d55-1f0c8a7b6e21";
    let agent = inbox.agent(session, &question, &[]);
    let message = posted(&telegram, "Deploy &lt;main&gt; &amp; tag?");
    assert!(
        message.text.starts_with("<b>Release</b>"),
        "{}",
        message.text
    );
    assert!(
        message
            .text
            .contains("• <b>production</b> — the &lt;real&gt; one"),
        "{}",
        message.text
    );
    // A long session id, by its end.
    assert!(
        message.text.contains("session …8a7b6e21") && !message.text.contains(session),
        "{}",
        message.text
    );
    let labels: Vec<&str> = message
        .buttons
        .iter()
        .flatten()
        .map(|(t, _)| t.as_str())
        .collect();
    assert_eq!(
        labels,
        ["staging", "production", "✍ Type your own answer", "Skip"]
    );

    // Someone not in `allow` is told so, and nothing changes.
    let refused = telegram.press(MALLORY, message.message_id, &message.button("production"));
    let told = telegram.told(&refused);
    assert_eq!(told["show_alert"], true);
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .contains("not in this inbox's allow list"),
        "{told}"
    );
    // Data this channel never made is refused, whoever sends it.
    let forged = telegram.press(ANA, message.message_id, "c0.0.9");
    assert_eq!(telegram.told(&forged)["text"], "No such option.");
    for forged in ["c7.0.0", "answer: production"] {
        let forged = telegram.press(ANA, message.message_id, forged);
        assert_eq!(
            telegram.told(&forged)["text"],
            "This question is no longer waiting."
        );
    }
    assert_eq!(inbox.list(false).len(), 1, "the question still waits");

    let pressed = telegram.press(ANA, message.message_id, &message.button("production"));
    assert_eq!(telegram.told(&pressed)["text"], "Answered.");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["production"]}])
    );
    let after = edited(
        &telegram,
        message.message_id,
        "Answered in Telegram by @ana",
    );
    assert!(
        after.text.ends_with("by @ana</b>: production"),
        "{}",
        after.text
    );
    assert!(after.buttons.is_empty(), "the keyboard goes: {after:?}");
    let listed = inbox.wait_for("the question answered", true, |q| q["state"] == "answered");
    assert_eq!(listed["settledBy"], "telegram");
    assert_eq!(listed["answeredBy"], "@ana");

    // The token is in no log and no process argument.
    let log = inbox.log();
    assert!(
        log.contains("the inbox serves") && !log.contains(TOKEN),
        "{log}"
    );
    assert!(!log.contains(&TOKEN[5..]), "{log}");
}

#[test]
fn a_batch_takes_a_multi_select_own_words_and_a_skip_and_is_sent_once_complete() {
    let telegram = FakeTelegram::start();
    let (inbox, _secrets) = telegram_inbox(&telegram);
    let batch = json!({"questions": [
        {"id": "parts", "question": "What goes in?", "multiSelect": true, "options": [
            {"label": "Tests"}, {"label": "Docs"}, {"label": "Bench"}]},
        {"id": "notes", "question": "Anything else?"},
        {"id": "when", "question": "When?", "options": [{"label": "Now"}, {"label": "Later"}]},
    ]});
    let agent = inbox.agent("s2", &batch, &[]);
    let parts = posted(&telegram, "What goes in?");
    let notes = posted(&telegram, "Anything else?");
    let when = posted(&telegram, "When?");
    assert!(parts.text.contains("question 1 of 3"), "{}", parts.text);

    // Ticks toggle, and the keyboard shows them.
    for label in ["Tests", "Docs", "Tests"] {
        let current = telegram.wait_for("the keyboard", |sent| {
            sent.iter()
                .find(|m| m.message_id == parts.message_id)
                .cloned()
        });
        let query = telegram.press(ANA, parts.message_id, &current.button(label));
        telegram.told(&query);
    }
    let ticked = telegram.wait_for("Docs ticked, Tests not", |sent| {
        sent.iter()
            .find(|m| m.message_id == parts.message_id && m.edits == 3)
            .cloned()
    });
    let labels: Vec<&str> = ticked
        .buttons
        .iter()
        .flatten()
        .map(|(t, _)| t.as_str())
        .collect();
    assert_eq!(labels[..4], ["☐ Tests", "☑ Docs", "☐ Bench", "Send ✓"]);
    let sent = telegram.press(ANA, parts.message_id, &ticked.button("Send"));
    let told = telegram.told(&sent);
    assert_eq!(told["text"], "Noted; 2 more to answer before it is sent.");
    // A partial answer taken is a toast, not an alert to dismiss.
    assert_eq!(told["show_alert"], false, "{told}");

    // Own words: the reply to the bot's prompt.
    let own = telegram.press(ANA, notes.message_id, &notes.button("Type your own answer"));
    assert_eq!(telegram.told(&own)["text"], "Type your answer as a reply.");
    let prompt = telegram.message(
        "Reply to this message with your answer to: Anything else?",
        |m| m.force_reply,
    );
    assert_eq!(prompt.reply_to, Some(notes.message_id));
    // Someone else's reply is passed over.
    telegram.reply(MALLORY, prompt.message_id, "drop the tables");
    telegram.reply(ANA, prompt.message_id, "ship it <now>");
    telegram.message("Noted; 1 more to answer before it is sent.", |m| {
        !m.force_reply
    });

    let skipped = telegram.press(ANA, when.message_id, &when.button("Skip"));
    assert_eq!(telegram.told(&skipped)["text"], "Answered.");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([
            {"id": "parts", "selected": ["Docs"]},
            {"id": "notes", "selected": [], "custom": "ship it <now>"},
            {"id": "when", "selected": []},
        ])
    );
    edited(
        &telegram,
        notes.message_id,
        "by @ana</b>: “ship it &lt;now&gt;”",
    );
    edited(&telegram, when.message_id, "by @ana</b>: skipped");
    edited(&telegram, parts.message_id, "by @ana</b>: Docs");
}

#[test]
fn a_channel_without_an_allow_list_or_a_token_is_refused_at_start_saying_why() {
    let telegram = FakeTelegram::start();
    let root = tempfile::tempdir().unwrap();
    for (table, why) in [
        (
            "token_env = \"ASK_USER_TEST_TELEGRAM\"\nchat = 1",
            "needs allow = [<Telegram user id>, …]",
        ),
        (
            "chat = 1\nallow = [1]",
            "needs the bot's token from token_env",
        ),
        (
            "token_env = \"ASK_USER_TEST_TELEGRAM\"\nchat = 1\nallow = [1]",
            "variable ASK_USER_TEST_TELEGRAM is not set",
        ),
        (
            "token = \"1:abc\"\nchat = 1\nallow = [1]",
            "unknown field `token`",
        ),
    ] {
        let config = root.path().join("inbox.toml");
        std::fs::write(
            &config,
            format!(
                "[inbox.channels.telegram]\n{table}\napi_url = \"{}\"\n",
                telegram.url
            ),
        )
        .unwrap();
        let output = super::ask_user()
            .env("ASK_USER_STATE_DIR", root.path().join("state"))
            .args(["inbox", "serve", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        assert!(!output.status.success());
        let said = stderr(&output);
        assert!(said.contains(why), "{table}: {said}");
    }
}

/// Another MCP server's form (relayed by Claude Code's hook) on Telegram:
/// a required choice has no "Type your own answer" and no Skip, and own
/// words a number field does not take are refused at once, saying why,
/// while the batch stays open for the right ones.
#[test]
fn a_forms_field_offers_and_takes_only_what_its_server_accepts() {
    let telegram = FakeTelegram::start();
    let (inbox, _secrets) = telegram_inbox(&telegram);
    let hook = inbox.elicit(
        &json!({"type": "object", "required": ["target"], "properties": {
        "target": {"type": "string", "title": "Target", "description": "Where to?",
            "enum": ["stg", "prod"], "enumNames": ["Staging", "Production"]},
        "replicas": {"type": "integer", "description": "How many replicas?", "minimum": 1}}}),
    );
    let target = posted(&telegram, "Where to?");
    let labels: Vec<&str> = target
        .buttons
        .iter()
        .flatten()
        .map(|(t, _)| t.as_str())
        .collect();
    assert_eq!(labels, ["Staging", "Production"]);
    let replicas = posted(&telegram, "How many replicas?");
    let own = telegram.press(
        ANA,
        replicas.message_id,
        &replicas.button("Type your own answer"),
    );
    telegram.told(&own);
    let prompt = telegram.message(
        "Reply to this message with your answer to: How many replicas?",
        |m| m.force_reply,
    );
    telegram.reply(ANA, prompt.message_id, "three");
    telegram.message("it takes a whole number, not \"three\".", |m| {
        !m.force_reply
    });
    let own = telegram.press(
        ANA,
        replicas.message_id,
        &replicas.button("Type your own answer"),
    );
    telegram.told(&own);
    let again = telegram.wait_for("a second prompt", |sent| {
        sent.iter()
            .rev()
            .find(|m| m.force_reply && m.message_id != prompt.message_id)
            .cloned()
    });
    telegram.reply(ANA, again.message_id, "3");
    telegram.message("Noted; 1 more to answer before it is sent.", |m| {
        !m.force_reply
    });
    let chosen = telegram.press(ANA, target.message_id, &target.button("Production"));
    assert_eq!(telegram.told(&chosen)["text"], "Answered.");
    let output = hook.finish();
    assert!(output.status.success(), "{}", stderr(&output));
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        printed["hookSpecificOutput"]["content"],
        json!({"target": "prod", "replicas": 3}),
        "{printed}"
    );
}

/// An update the inbox cannot read (a press without `from`) is passed
/// over and read past, and a reply far over the bound (6 MiB of
/// `getUpdates`) is refused as the service being down, read no further
/// than the bound: neither holds up the press that comes after.
#[test]
fn an_unreadable_update_and_an_oversized_reply_hold_nothing_up() {
    let telegram = FakeTelegram::start();
    let (inbox, _secrets) = telegram_inbox(&telegram);
    let agent = inbox.agent("s1", &choice("Deploy?", &["Yes", "No"]), &[]);
    let message = posted(&telegram, "Deploy?");
    telegram.push_raw(json!({"callback_query": {
        "id": "anonymous", "chat_instance": "1", "data": message.button("Yes"),
        "message": {"message_id": message.message_id, "date": 0,
            "chat": {"id": ask_user_test_support::fake_telegram::CHAT, "type": "private"}}}}));
    telegram.pad_next_updates(6 << 20);
    let pressed = telegram.press(ANA, message.message_id, &message.button("Yes"));
    assert_eq!(telegram.told(&pressed)["text"], "Answered.");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
    let log = inbox.log();
    assert!(
        log.contains("an update that cannot be read is passed over"),
        "{log}"
    );
    assert!(log.contains("a reply of over 4 MiB"), "{log}");
    assert!(
        telegram
            .calls("answerCallbackQuery")
            .iter()
            .all(|call| call.body["callback_query_id"] != "anonymous"),
        "the unreadable press answered nothing"
    );
}

/// `inbox phone telegram` against `telegram`, in a home whose config
/// folder is `home`, with `token` pasted (standard input then closed); its
/// output piped.
fn phone_telegram(
    telegram: &FakeTelegram,
    home: &std::path::Path,
    token: &str,
) -> std::process::Child {
    use std::io::Write;
    use std::process::Stdio;
    let mut phone = super::ask_user()
        .env("XDG_CONFIG_HOME", home)
        .args(["inbox", "phone", "telegram", "--wait", "60s", "--api-url"])
        .arg(&telegram.url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(phone.stdin.take().unwrap(), "{token}").unwrap();
    phone
}

/// `inbox phone telegram`: the token pasted once (kept in a file of mode
/// 0600 beside the config, never in it), the chat and the person found by
/// the `/start` with the code the command shows (a stranger's `/start`
/// counts for nothing), a test button that a stranger's press does not
/// pass and the person's does; and the inbox with that file answers in
/// the chat.
#[test]
fn a_phone_is_set_up_for_telegram_by_one_command_and_answers_there() {
    use std::io::{BufRead, BufReader};

    let telegram = FakeTelegram::start();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("ask-user/config.toml");
    let mut phone = phone_telegram(&telegram, home.path(), TOKEN);
    let mut out = BufReader::new(phone.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    let link = loop {
        let line = out.next().expect("the command shows a link").unwrap();
        said.push(line.clone());
        if let Some(link) = line.trim().strip_prefix("https://t.me/") {
            break link.to_owned();
        }
    };
    let code = link
        .strip_prefix(&format!("{BOT_USERNAME}?start="))
        .unwrap_or_else(|| panic!("a link to the bot with a code: {link}"));
    assert_eq!(code.len(), 16, "{code}");
    // Anyone can message the bot: a /start without the code, or with
    // another, counts for nothing.
    telegram.write(MALLORY, "/start");
    telegram.write(MALLORY, "/start 0123456789abcdef");
    telegram.write(ANA, &format!("/start {code}"));
    let test = telegram.message("press the button", |m| !m.buttons.is_empty());
    let stranger = telegram.press(MALLORY, test.message_id, &test.button("It works"));
    assert_eq!(telegram.told(&stranger)["text"], "Not this one.");
    let pressed = telegram.press(ANA, test.message_id, &test.button("It works"));
    assert_eq!(telegram.told(&pressed)["text"], "It works.");
    said.extend(out.map(Result::unwrap));
    let said = said.join("\n");
    let status = phone.wait().unwrap();
    assert!(status.success(), "{said}");
    assert!(
        said.contains("It works: your phone's press came back"),
        "{said}"
    );
    assert!(!said.contains(TOKEN), "the token is never shown: {said}");

    let written = std::fs::read_to_string(&config).unwrap();
    assert!(!written.contains(TOKEN), "{written}");
    let token_file = home.path().join("ask-user/telegram-token");
    assert!(
        written.contains(&format!(
            "[inbox.channels.telegram]\ntoken_file = \"{}\"\nchat = {}\nallow = [{}]\n",
            token_file.display(),
            ask_user_test_support::fake_telegram::CHAT,
            ANA.id
        )),
        "{written}"
    );
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), TOKEN);
    for file in [&config, &token_file] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }

    // The inbox with that file: a question in the chat, answered there.
    let inbox = Inbox::with_config(&written);
    let agent = inbox.agent("s-phone", &choice("Deploy now?", &["Yes", "No"]), &[]);
    let asked = posted(&telegram, "Deploy now?");
    let query = telegram.press(ANA, asked.message_id, &asked.button("Yes"));
    assert_eq!(telegram.told(&query)["text"], "Answered.");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
}

/// A pasted token of the wrong shape, or one Telegram refuses, ends
/// `inbox phone telegram` saying so, with nothing written.
#[test]
fn a_telegram_phone_setup_refuses_a_wrong_token_and_writes_nothing() {
    let telegram = FakeTelegram::start();
    let home = tempfile::tempdir().unwrap();
    for (token, why) in [
        ("not-a-token", "not a bot's token"),
        ("4242:someone-elses", "Telegram refused the token"),
    ] {
        let output = phone_telegram(&telegram, home.path(), token)
            .wait_with_output()
            .unwrap();
        assert!(!output.status.success());
        assert!(stderr(&output).contains(why), "{}", stderr(&output));
        assert!(!stderr(&output).contains(token), "{}", stderr(&output));
        assert!(!home.path().join("ask-user").exists(), "nothing written");
    }
}
