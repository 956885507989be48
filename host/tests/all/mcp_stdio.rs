//! `ask-user mcp` on stdio with a raw JSON-RPC client: what no well-made
//! client sends still ends every call.

use ask_user_test_support::mcp_peer;
use ask_user_test_support::tui;

use std::process::Command;
use std::time::Duration;

use mcp_peer::McpPeer;
use serde_json::json;

/// The longest any state is waited for.
const BOUND: Duration = Duration::from_secs(60);

/// `ask-user mcp` with `config` (TOML) as its config file, if any.
fn server(config: Option<&str>) -> (Command, Option<tempfile::TempDir>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .arg("mcp")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    let dir = config.map(|config| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), config).unwrap();
        command.arg("--config").arg(dir.path().join("config.toml"));
        dir
    });
    (command, dir)
}

/// A client that shows forms.
fn forms() -> serde_json::Value {
    json!({"elicitation": {"form": {}}})
}

const ONE_QUESTION: &str = r#"{"questions": [{"id": "go", "question": "Ship it?"}]}"#;

#[test]
fn a_signal_ends_the_server_at_once_and_aborts_its_open_call() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let (command, _dir) = server(None);
        let mut peer = McpPeer::start(command, forms());
        peer.call(1, &serde_json::from_str(ONE_QUESTION).unwrap());
        peer.next(BOUND, |m| m["method"] == "elicitation/create")
            .expect("the form is asked");
        peer.signal(signal);
        let reply = peer.reply(1, BOUND).expect("the open call is answered");
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert_eq!(reply["result"]["_meta"]["code"], "ASK_ABORTED", "{reply}");
        // Its input is still open: the server exits all the same.
        let status = peer.exit(BOUND).expect("the server exits");
        assert!(status.success(), "signal {signal}: {status:?}");
    }
}

#[test]
fn with_forms_never_the_configs_answerers_answer_a_client_that_shows_forms() {
    let script = r#"
        [mcp]
        forms = "never"
        [[answerer]]
        kind = "script"
        rules = [{ id = "go", custom = "yes, from the script" }]
    "#;
    let (command, _dir) = server(Some(script));
    let mut peer = McpPeer::start(command, forms());
    peer.call(1, &serde_json::from_str(ONE_QUESTION).unwrap());
    let reply = peer.reply(1, BOUND).expect("the call ends");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        r#"{"answers":[{"id":"go","selected":[],"custom":"yes, from the script"}]}"#,
        "{reply}"
    );
}

#[test]
fn a_client_that_sets_a_log_level_is_told_how_each_call_goes() {
    let script = r#"
        [mcp]
        forms = "never"
        [[answerer]]
        kind = "script"
        rules = [{ id = "go", custom = "yes" }, { question = ".", reject = "ASK_CANCELLED" }]
    "#;
    let (command, _dir) = server(Some(script));
    let mut peer = McpPeer::start(command, forms());
    let logged = |m: &serde_json::Value| m["method"] == "notifications/message";
    // No level set: nothing is logged before the reply.
    peer.call(1, &serde_json::from_str(ONE_QUESTION).unwrap());
    let first = peer
        .next(BOUND, |m| logged(m) || m["id"] == 1)
        .expect("the call ends");
    assert_eq!(first["id"], 1, "logged without a level: {first}");

    peer.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
        "params": {"level": "info"}}),
    );
    let set = peer.reply(2, BOUND).expect("the level is taken");
    assert_eq!(set["result"], json!({}), "{set}");
    peer.call(3, &serde_json::from_str(ONE_QUESTION).unwrap());
    let asking = peer.next(BOUND, logged).expect("the ask is logged");
    assert_eq!(asking["params"]["level"], "info", "{asking}");
    assert_eq!(asking["params"]["logger"], "ask-user", "{asking}");
    assert_eq!(asking["params"]["data"]["event"], "asking", "{asking}");
    assert_eq!(asking["params"]["data"]["questions"], 1, "{asking}");
    let answered = peer.next(BOUND, logged).expect("the answer is logged");
    assert_eq!(
        answered["params"]["data"]["event"], "answered",
        "{answered}"
    );
    peer.reply(3, BOUND).expect("the call ends");

    // At "warning", only a call that ends without an answer is logged.
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "logging/setLevel",
        "params": {"level": "warning"}}),
    );
    peer.reply(4, BOUND).expect("the level is taken");
    peer.call(
        5,
        &json!({"questions": [{"id": "other", "question": "Anything else?"}]}),
    );
    let ended = peer.next(BOUND, logged).expect("the refusal is logged");
    assert_eq!(ended["params"]["level"], "warning", "{ended}");
    assert_eq!(ended["params"]["data"]["code"], "ASK_CANCELLED", "{ended}");
    peer.reply(5, BOUND).expect("the call ends");
}

/// A call's progress says where its question waits only from notices
/// without a secret: a web page's notice carries the page's token, and a
/// client may log the progress it is sent.
#[test]
fn a_pages_token_never_goes_into_a_calls_progress() {
    let config =
        "timeout = \"1s\"\n\n[mcp]\nforms = \"never\"\n\n[[answerer]]\nkind = \"web\"\nport = 0\n";
    let (command, _dir) = server(Some(config));
    let mut peer = McpPeer::start(command, json!({}));
    peer.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "ask_user_question",
            "arguments": serde_json::from_str::<serde_json::Value>(ONE_QUESTION).unwrap(),
            "_meta": {"progressToken": "p1"}}}));
    let first = peer
        .next(BOUND, |m| {
            m["method"] == "notifications/progress" || m["id"] == 1
        })
        .expect("the call ends");
    assert_eq!(first["id"], 1, "progress with the page's address: {first}");
    assert!(first.to_string().contains("ASK_TIMED_OUT"), "{first}");
}

#[test]
fn with_forms_last_the_form_comes_only_when_the_configs_answerers_pass() {
    let script = r#"
        [mcp]
        forms = "last"
        [[answerer]]
        kind = "script"
        rules = [{ id = "go", custom = "from the script" }, { question = ".", pass = true }]
    "#;
    let (command, _dir) = server(Some(script));
    let mut peer = McpPeer::start(command, forms());
    peer.call(1, &serde_json::from_str(ONE_QUESTION).unwrap());
    let reply = peer.reply(1, BOUND).expect("the script answers");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("from the script"), "{reply}");
    // The script passes this one on: the client's form gets it.
    peer.call(
        2,
        &json!({"questions": [{"id": "other", "question": "Anything else?"}]}),
    );
    let form = peer
        .next(BOUND, |m| m["method"] == "elicitation/create")
        .expect("the form is asked after the script passed");
    peer.send(&json!({"jsonrpc": "2.0", "id": form["id"],
        "result": {"action": "accept", "content": {"q01_other": "no"}}}));
    let reply = peer.reply(2, BOUND).expect("the call ends");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        r#"{"answers":[{"id":"other","selected":[],"custom":"no"}]}"#
    );
}

#[test]
fn an_answerer_that_cannot_start_is_named_and_the_tool_still_served() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let config = format!("[[answerer]]\nkind = \"web\"\nport = {port}\n");
    let (command, _dir) = server(Some(&config));
    let mut peer = McpPeer::start(command, forms());
    let stderr = peer.stderr();
    assert!(
        stderr.contains("cannot start answerer 1 (web)") && stderr.contains("without it"),
        "{stderr}"
    );
    peer.call(1, &serde_json::from_str(ONE_QUESTION).unwrap());
    let form = peer
        .next(BOUND, |m| m["method"] == "elicitation/create")
        .expect("the tool is served, with the client's form");
    peer.send(&json!({"jsonrpc": "2.0", "id": form["id"],
        "result": {"action": "accept", "content": {"q01_go": "yes"}}}));
    let reply = peer.reply(1, BOUND).expect("the call ends");
    assert_eq!(reply["result"]["isError"], false, "{reply}");
}

/// Codex (0.169) shows no list fields, sorts fields by key, cannot leave an
/// empty last text field and declines a page offer unseen: it gets a yes or
/// no per option, keys in question order, a closing "Send", and no offer,
/// even with a page to offer and a protocol that has lists.
#[test]
fn codex_gets_a_form_it_can_show_in_question_order() {
    let config = "[[answerer]]\nkind = \"web\"\nport = 0\n";
    let (command, _dir) = server(Some(config));
    let capabilities = json!({"elicitation": {"form": {}, "url": {}}});
    let mut peer = McpPeer::start_as(command, capabilities, "codex-mcp-client", "2025-11-25");
    let deploy: serde_json::Value =
        serde_json::from_str(include_str!("../../../examples/deploy.json")).unwrap();
    peer.call(1, &deploy);
    let form = peer
        .next(BOUND, |m| m["method"] == "elicitation/create")
        .expect("a form is asked");
    let params = &form["params"];
    assert_ne!(params["mode"], "url", "no page offer to Codex: {params}");
    let properties = params["requestedSchema"]["properties"].as_object().unwrap();
    let keys: Vec<&String> = properties.keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(
        keys, sorted,
        "sorted by key, the fields keep question order"
    );
    assert!(
        properties.values().all(|p| p["type"] != "array"),
        "{properties:?}"
    );
    let (last, send) = properties.iter().next_back().unwrap();
    assert_eq!(send["type"], "boolean", "{last} comes last");
    let options: Vec<&String> = keys
        .iter()
        .copied()
        .filter(|k| k.starts_with("q02_checks_opt"))
        .collect();
    let labels: Vec<&str> = deploy["questions"][1]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        options.len(),
        labels.len(),
        "one yes or no per option: {keys:?}"
    );
    // The person ticks two checks and leaves the own words empty.
    let mut content = serde_json::Map::new();
    content.insert(options[0].clone(), json!(true));
    content.insert(options[2].clone(), json!(true));
    content.insert(options[1].clone(), json!(false));
    content.insert("q02_checks_own".into(), json!(""));
    content.insert(last.clone(), json!(true));
    peer.send(&json!({"jsonrpc": "2.0", "id": form["id"],
        "result": {"action": "accept", "content": content}}));
    let reply = peer.reply(1, BOUND).expect("the call ends");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    let expected = json!({"answers": [
        {"id": "target", "selected": []},
        {"id": "checks", "selected": [labels[0], labels[2]]},
        {"id": "note", "selected": []},
    ]});
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(text).unwrap(),
        expected,
        "{text}"
    );
}

#[test]
fn a_form_answer_too_large_to_take_ends_the_call_with_a_clear_error() {
    let (command, _dir) = server(None);
    let mut peer = McpPeer::start(command, forms());
    peer.call(
        1,
        &json!({"questions": [{"id": "note", "question": "Anything else?"}]}),
    );
    let form = peer
        .next(BOUND, |m| m["method"] == "elicitation/create")
        .expect("the form is asked");
    // An answer of 17 MiB on one line: over the largest message taken.
    let huge = "x".repeat(17 << 20);
    let answer = json!({"jsonrpc": "2.0", "id": form["id"],
        "result": {"action": "accept", "content": {"q01_note": huge}}});
    peer.send(&answer);
    let reply = peer.reply(1, BOUND).expect("the call ends");
    let result = &reply["result"];
    assert_eq!(result["isError"], true, "{reply}");
    assert_eq!(result["_meta"]["code"], "INVALID_ANSWER", "{reply}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("larger than 16 MiB"), "{text}");
    // The server goes on: the next call is answered as usual.
    peer.call(
        2,
        &json!({"questions": [{"id": "note", "question": "Anything else?"}]}),
    );
    let form = peer
        .next(BOUND, |m| m["method"] == "elicitation/create")
        .expect("the next form is asked");
    peer.send(&json!({"jsonrpc": "2.0", "id": form["id"],
        "result": {"action": "accept", "content": {"q01_note": "no"}}}));
    let reply = peer.reply(2, BOUND).expect("the next call ends");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        r#"{"answers":[{"id":"note","selected":[],"custom":"no"}]}"#
    );
}

/// Started by hand at a terminal, the server says what it waits for, and
/// Ctrl-C stops it.
#[test]
fn started_by_hand_it_says_it_waits_for_a_client_and_ctrl_c_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = env!("CARGO_TARGET_TMPDIR");
    let mut tui = tui::Tui::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_ask-user")),
        &["mcp"],
        dir.path(),
        &[
            ("XDG_CONFIG_HOME", "/nonexistent"),
            ("XDG_CACHE_HOME", cache),
        ],
    );
    tui.wait_for(&["waiting for an MCP client on standard input"], BOUND);
    tui.keys("\x03");
    assert!(tui.ended(BOUND).is_some(), "Ctrl-C stopped it");
}

/// On stdio the server serves one client's run: the inbox names its
/// questions as the client (Gemini CLI's `clientInfo`, not `ask-user (pid
/// N)`) and shows a run's calls in one session.
#[test]
fn one_clients_calls_show_together_named_as_the_client() {
    one_clients_calls_show_together_named(None, "Gemini CLI");
}

/// The config's `agent` names the questions instead; a run's calls still
/// show together.
#[test]
fn one_clients_calls_show_together_named_as_the_config_says() {
    one_clients_calls_show_together_named(Some("ci-bot"), "ci-bot");
}

fn one_clients_calls_show_together_named(agent: Option<&str>, named: &str) {
    let inbox = crate::inbox::Inbox::new();
    let config = inbox.agent_config();
    if let Some(agent) = agent {
        let file = format!("[[answerer]]\nkind = \"inbox\"\nagent = {agent:?}\n");
        std::fs::write(&config, file).unwrap();
    }
    let mut command = inbox.command();
    command
        .args(["mcp", "--config"])
        .arg(config)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    let mut peer = McpPeer::start_as(command, json!({}), "gemini-cli-mcp-client", "2025-06-18");
    peer.call(1, &serde_json::from_str(ONE_QUESTION).unwrap());
    peer.call(
        2,
        &json!({"questions": [{"id": "when", "question": "When?"}]}),
    );
    let both = inbox.wait_until("both calls' questions", false, |list| {
        (list.len() == 2).then_some(list)
    });
    for question in &both {
        assert_eq!(question["agent"], named, "{question}");
        assert_eq!(question["session"], both[0]["session"], "{both:?}");
    }
    assert!(
        both[0]["session"].as_str().unwrap().starts_with("mcp-run-"),
        "{both:?}"
    );
    let id = both
        .iter()
        .find(|q| q["questions"][0]["id"] == "go")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = json!({"answers": [{"id": "go", "selected": [], "custom": "Yes"}]});
    let answered = inbox.answer(&id, &answer);
    assert!(answered.status.success(), "inbox answer: {answered:?}");
    let reply = peer.reply(1, BOUND).expect("the call ends");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Yes")),
        "{reply}"
    );
}

/// A call its client cancels (a timeout) leaves its question in the inbox,
/// its agent gone; the answer given then goes to the same call asked again
/// in the run, at once, and the inbox holds one question.
#[test]
fn an_answer_given_after_the_client_gave_up_goes_to_the_same_call_asked_again() {
    let inbox = crate::inbox::Inbox::new();
    let mut command = inbox.command();
    command
        .args(["mcp", "--config"])
        .arg(inbox.agent_config())
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    let mut peer = McpPeer::start(command, json!({}));
    let question: serde_json::Value = serde_json::from_str(ONE_QUESTION).unwrap();
    peer.call(1, &question);
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    peer.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "timed out"}}),
    );
    let left = inbox.wait_for("its agent gone", false, |q| q["agentWaiting"] == false);
    assert_eq!(left["id"], asked["id"], "{left}");
    assert_eq!(left["state"], "waiting", "{left}");

    let answer = json!({"answers": [{"id": "go", "selected": [], "custom": "Yes, late"}]});
    let answered = inbox.answer(asked["id"].as_str().unwrap(), &answer);
    assert!(answered.status.success(), "inbox answer: {answered:?}");
    peer.call(2, &question);
    let reply = peer.reply(2, BOUND).expect("the call asked again ends");
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Yes, late"), "{reply}");
    let all = inbox.wait_until("the history", true, Some);
    assert_eq!(all.len(), 1, "one question, answered once: {all:?}");
}
