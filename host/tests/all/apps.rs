//! `ask-user mcp` for a client that renders MCP Apps and shows no forms:
//! its form as an app. In a host built on the official libraries
//! (`host/tests/npm/apps-host.mjs`: the ext-apps host library's AppBridge in
//! headless Chromium, the MCP client of the official TypeScript SDK), and
//! with a raw JSON-RPC client for what no well-made host sends.

use ask_user_test_support::browser;
use ask_user_test_support::mcp_peer::McpPeer;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use fantoccini::Locator;
use serde_json::{Value, json};

/// The longest any state is waited for.
const BOUND: Duration = Duration::from_secs(60);

/// A client that renders apps (and declared no forms).
fn renders_apps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

fn server() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .arg("mcp")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    command
}

fn questions() -> Value {
    json!({"questions": [
        {"id": "db", "header": "Database", "question": "Which database?",
         "options": [{"label": "Postgres", "description": "the usual"}, {"label": "SQLite"}]},
        {"id": "why", "question": "Why that one?"},
    ]})
}

/// The test host, its lines on a channel, killed when dropped.
struct AppsHost {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl AppsHost {
    fn start(arguments: &Value) -> AppsHost {
        let npm = ask_user_test_support::npm::folder();
        let server = server();
        let mut child = Command::new(npm.join("node_modules/.bin/node"))
            .arg(npm.join("apps-host.mjs"))
            .arg(arguments.to_string())
            .arg("--")
            .arg(server.get_program())
            .args(server.get_args())
            .envs(server.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs the apps host");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        AppsHost { child, lines }
    }

    /// What follows `prefix` on the next line that starts with it.
    fn said(&self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(BOUND)
                .unwrap_or_else(|_| panic!("the apps host never said {prefix:?}"));
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.trim().to_owned();
            }
        }
    }
}

impl Drop for AppsHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_renders_apps_shows_the_form_and_its_answer_reaches_the_model() {
    let _one = browser::BROWSER.lock().await;
    let host = AppsHost::start(&questions());
    // The model is offered the question tool alone: the app's are hidden.
    assert_eq!(host.said("MODEL_SEES"), r#"["ask_user_question"]"#);
    let url = host.said("LISTENING");
    let browser = browser::Browser::start().await;
    browser.client.goto(&url).await.unwrap();
    browser.wait_for("iframe#app").await;
    browser.client.enter_frame(0).await.unwrap();

    // The form is the question's: the choice with its description, and
    // nothing chosen for the person.
    let db = browser
        .wait_for("#field-q01_db")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        db.contains("Database") && db.contains("Which database?"),
        "{db}"
    );
    assert!(db.contains("Postgres: the usual"), "{db}");
    browser.click("#field-q01_db input[value=\"SQLite\"]").await;
    // Words the questions cannot take are refused on the form, and stay
    // there to be mended: nothing the person typed is lost.
    let long = "x".repeat(16_001);
    browser
        .client
        .execute(
            "document.querySelector('textarea[name=q02_why]').value = arguments[0]",
            vec![json!(long)],
        )
        .await
        .unwrap();
    browser.click("#send").await;
    let problem = browser.wait_for("#problem:not([hidden])").await;
    let said = problem.text().await.unwrap();
    assert!(said.contains("nothing was sent"), "{said}");
    let kept = browser
        .client
        .execute(
            "return document.querySelector('textarea[name=q02_why]').value.length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(kept, json!(16_001));
    let why = browser.wait_for("textarea[name=q02_why]").await;
    why.clear().await.unwrap();
    why.send_keys("smaller to ship").await.unwrap();
    browser.click("#send").await;

    let result: Value = serde_json::from_str(&host.said("RESULT")).unwrap();
    assert_eq!(result["isError"], json!(false), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    let answers: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        answers["answers"][0]["selected"],
        json!(["SQLite"]),
        "{text}"
    );
    assert_eq!(answers["answers"][1]["custom"], "smaller to ship", "{text}");
    // The host gave the app the call's result: it says the answers arrived.
    browser
        .client
        .wait()
        .at_most(BOUND)
        .for_element(Locator::XPath(
            "//p[@id='status'][contains(., 'the agent has your answers')]",
        ))
        .await
        .expect("the app says the answers arrived");
    browser.close().await;
}

/// Calls the app's tool `name` as request `id`.
fn app_call(peer: &mut McpPeer, id: u64, name: &str, arguments: Value) -> Value {
    peer.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}}));
    peer.reply(id, BOUND).expect("the app's call is answered")
}

#[test]
fn the_apps_tools_answer_only_the_form_they_fetched_and_only_with_fitting_answers() {
    let mut peer = McpPeer::start(server(), renders_apps());
    let args = questions();
    peer.call(1, &args);
    let fetched = app_call(&mut peer, 2, "ask_user_form", json!({"arguments": args}));
    let form = &fetched["result"]["structuredContent"];
    let ticket = form["ticket"].as_str().expect("a ticket").to_owned();
    let schema = &form["form"]["requestedSchema"]["properties"];
    assert_eq!(schema["q01_db"]["oneOf"][1]["const"], "SQLite", "{form}");

    // Other arguments have no form; a ticket not handed out answers nothing.
    let other = app_call(
        &mut peer,
        3,
        "ask_user_form",
        json!({"arguments": {"questions": [{"id": "x", "question": "Other?"}]}}),
    );
    assert_eq!(other["result"]["isError"], true, "{other}");
    let forged = app_call(
        &mut peer,
        4,
        "ask_user_answer",
        json!({"ticket": "forged", "action": "decline"}),
    );
    assert_eq!(forged["result"]["isError"], true, "{forged}");

    // A label the question does not offer: said back, the question open.
    let misfit = app_call(
        &mut peer,
        5,
        "ask_user_answer",
        json!({"ticket": ticket, "action": "accept", "content": {"q01_db": "MySQL"}}),
    );
    assert_eq!(misfit["result"]["isError"], true, "{misfit}");
    let words = misfit["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        words.contains("MySQL") && words.contains("still open"),
        "{words}"
    );

    // Dismissed: the model is told, and the ticket is spent.
    peer.send(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "ask_user_answer",
                   "arguments": {"ticket": ticket, "action": "decline"}}}));
    let (mut declined, mut ended) = (Value::Null, Value::Null);
    while declined.is_null() || ended.is_null() {
        let reply = peer
            .next(BOUND, |m| {
                m.get("method").is_none() && (m["id"] == 1 || m["id"] == 6)
            })
            .expect("the dismissal and the call are answered");
        match reply["id"] == 1 {
            true => ended = reply,
            false => declined = reply,
        }
    }
    assert_eq!(declined["result"]["isError"], false, "{declined}");
    assert_eq!(ended["result"]["_meta"]["code"], "ASK_CANCELLED", "{ended}");
    let again = app_call(
        &mut peer,
        7,
        "ask_user_answer",
        json!({"ticket": ticket, "action": "decline"}),
    );
    let gone = again["result"]["content"][0]["text"].as_str().unwrap();
    assert!(gone.contains("no longer waiting"), "{again}");
}

#[test]
fn a_client_that_renders_no_apps_is_offered_neither_the_app_nor_its_tools() {
    let mut peer = McpPeer::start(server(), json!({}));
    peer.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tools = peer.reply(1, BOUND).unwrap();
    let tools = tools["result"]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["name"], "ask_user_question");
    assert!(tools[0]["_meta"].get("ui").is_none(), "{:?}", tools[0]);
    peer.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"}));
    let resources = peer.reply(2, BOUND).unwrap();
    assert_eq!(resources["result"]["resources"], json!([]), "{resources}");
    // Its model cannot answer a question through the app's tool.
    let answer = app_call(
        &mut peer,
        3,
        "ask_user_answer",
        json!({"ticket": "t", "action": "accept"}),
    );
    assert!(answer.get("error").is_some(), "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("there is no tool")
    );
}
