//! `ask-user mcp --http` spoken to in raw HTTP: what its clients see when a
//! stream drops or the server stops.

use ask_user_test_support::hooks;
use ask_user_test_support::http_server;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use http_server::Server;

/// The longest any state is waited for.
const BOUND: Duration = Duration::from_secs(60);

const ONE_QUESTION: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
    {"name": "ask_user_question", "arguments": {"questions": [{"id": "go", "question": "Ship it?"}]}}}"#;

#[tokio::test]
async fn a_signal_answers_open_calls_aborted_on_their_streams_then_exits() {
    let mut server = Server::start(&["--config", "/dev/null"]);
    let session = Session::open(&server).await;
    let mut call = session
        .post(serde_json::from_str(ONE_QUESTION).unwrap())
        .await;
    let seen = read_from(&mut call, "elicitation/create").await;
    assert!(seen.contains("Ship it?"), "{seen}");

    server.signal(libc::SIGTERM);
    let rest = read_from(&mut call, "\"id\":1").await;
    assert!(rest.contains("ASK_ABORTED"), "{rest}");
    let status = tokio::task::spawn_blocking(move || server.exit(BOUND))
        .await
        .unwrap()
        .expect("the server exits");
    assert!(status.success(), "{status:?}");
}

/// A question may wait for minutes behind a proxy that cuts idle streams:
/// the call goes on, and its result comes on the stream the client resumes
/// with the last event id it saw.
#[tokio::test]
async fn a_call_outlives_its_dropped_stream_and_answers_on_the_resumed_one() {
    let server = Server::start(&["--config", "/dev/null"]);
    let session = Session::open(&server).await;
    let mut call = session
        .post(serde_json::from_str(ONE_QUESTION).unwrap())
        .await;
    let seen = read_from(&mut call, "elicitation/create").await;
    let last_id = seen
        .lines()
        .filter_map(|line| line.strip_prefix("id: "))
        .next_back()
        .expect("the events carry ids")
        .to_owned();
    let form_id = seen
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message["method"] == "elicitation/create")
        .expect("the form")["id"]
        .clone();
    drop(call);

    let mut resumed = session.resume(&last_id).await;
    assert!(resumed.status().is_success(), "{}", resumed.status());
    // The person answers the form only now.
    let answered = session
        .post(json!({"jsonrpc": "2.0", "id": form_id,
            "result": {"action": "accept", "content": {"q01_go": "yes"}}}))
        .await;
    assert!(answered.status().is_success(), "{}", answered.status());
    let rest = read_from(&mut resumed, "\"id\":1,").await;
    assert!(rest.contains(r#"\"custom\":\"yes\""#), "{rest}");
}

/// A call waiting on the inbox survives `kill -9` of its server: the human
/// answers while it is down, and the same call asked of the server started
/// again (with the same token) gets that answer at once, from the same
/// question. A server with another token never finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_on_the_inbox_survives_kill_9_of_its_server() {
    let inbox = InboxBehind::start();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
        {"name": "ask_user_question", "arguments": {"questions": [{"id": "go",
        "question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}]}}});

    // The server names the variable; the token never reaches its log.
    let first = inbox.server(true);
    assert_eq!(first.token, TOKEN);
    assert!(
        first.announced.contains("Bearer $ASK_USER_MCP_TOKEN") && !first.announced.contains(TOKEN),
        "{}",
        first.announced
    );
    let session = Session::open(&first).await;
    let waiting_call = session.post(call.clone()).await;
    let question = tokio::task::block_in_place(|| inbox.new_question());
    first.kill9();
    drop(waiting_call);

    // Answered while no server runs.
    inbox.answer(
        &question,
        r#"{"answers": [{"id": "go", "selected": ["Yes"]}]}"#,
    );

    let again = inbox.server(true);
    let session = Session::open(&again).await;
    let mut result = session.post(call.clone()).await;
    let text = read_from(&mut result, "\"id\":1,").await;
    assert!(text.contains(r#"\"selected\":[\"Yes\"]"#), "{text}");
    let all = inbox_list(&inbox.state(), true).await;
    assert_eq!(all.len(), 1, "the call found its question: {all:?}");

    // Another token: another server's call, never the question of this one.
    let stranger = inbox.server(false);
    let session = Session::open(&stranger).await;
    let _asking = session.post(call).await;
    let stranger_question = tokio::task::block_in_place(|| inbox.new_question());
    assert_ne!(stranger_question, question);
    assert_eq!(inbox_list(&inbox.state(), true).await.len(), 2);
}

/// A task outlives its server: stopped (Ctrl-C), its question stays in the
/// inbox; asked for by its id, the server started again asks it again
/// (the same question); killed, and answered while no server runs, the
/// next server gives the answer; and once it has, a server started again
/// gives the same result, asking nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_found_by_its_id_after_its_server_stops_and_is_killed() {
    let inbox = InboxBehind::start();
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let get = |task: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
        "params": {"taskId": task}})
    };

    let mut first = inbox.server(true);
    let session = Session::open_with(&first, tasks.clone()).await;
    let made = session
        .ask(serde_json::from_str(ONE_QUESTION).unwrap())
        .await;
    let task = made["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    let question = tokio::task::block_in_place(|| inbox.new_question());
    let working = session.ask(get(&task)).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    let said = working["result"]["statusMessage"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains("inbox"), "where it waits: {working}");
    first.signal(libc::SIGTERM);
    let stopped = tokio::task::spawn_blocking(move || first.exit(BOUND))
        .await
        .unwrap();
    assert!(stopped.is_some_and(|s| s.success()), "{stopped:?}");
    let waiting = inbox_list(&inbox.state(), false).await;
    assert_eq!(waiting.len(), 1, "the question still waits: {waiting:?}");

    let second = inbox.server(true);
    let session = Session::open_with(&second, tasks.clone()).await;
    let again = session.ask(get(&task)).await;
    assert_eq!(again["result"]["taskId"], task.as_str(), "{again}");
    assert_eq!(again["result"]["status"], "working", "{again}");
    second.kill9();
    inbox.answer(
        &question,
        r#"{"answers": [{"id": "go", "selected": [], "custom": "Yes"}]}"#,
    );

    let third = inbox.server(true);
    let session = Session::open_with(&third, tasks.clone()).await;
    let done = session.until_ended(get(&task)).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains(r#""custom":"Yes""#), "{done}");
    third.kill9();

    let fourth = inbox.server(true);
    let session = Session::open_with(&fourth, tasks).await;
    let kept = session.ask(get(&task)).await;
    assert_eq!(kept["result"]["status"], "completed", "{kept}");
    assert_eq!(kept["result"]["result"], done["result"]["result"], "{kept}");
    let all = inbox_list(&inbox.state(), true).await;
    assert_eq!(all.len(), 1, "one question, asked once: {all:?}");
}

/// The token every server of a test with [`InboxBehind`] is given.
const TOKEN: &str = "restart-survival-token-0123456789abcdef";

/// An inbox for servers to ask (`[mcp] forms = "never"`), which tells the
/// test of each new question (its webhook); killed when dropped.
struct InboxBehind {
    dir: tempfile::TempDir,
    hooks: std::sync::mpsc::Receiver<hooks::Hook>,
    inbox: Child,
}

impl InboxBehind {
    fn start() -> InboxBehind {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("agent.toml"),
            "[mcp]\nforms = \"never\"\n\n[[answerer]]\nkind = \"inbox\"\n",
        )
        .unwrap();
        let (hooks_at, hooks) = hooks::hook_server();
        let inbox_config = dir.path().join("inbox.toml");
        std::fs::write(
            &inbox_config,
            format!("[inbox.notify]\nwebhook = \"{hooks_at}/hook\"\n"),
        )
        .unwrap();
        let mut inbox = ask_user(&dir.path().join("state"))
            .args(["inbox", "serve", "--config"])
            .arg(&inbox_config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = http_server::child::said_on_stderr(&mut inbox, "the inbox serves", BOUND);
        let behind = InboxBehind { dir, hooks, inbox };
        said.unwrap_or_else(|why| panic!("the inbox did not start: {why}"));
        behind
    }

    fn state(&self) -> std::path::PathBuf {
        self.dir.path().join("state")
    }

    /// A server's environment: the inbox's state, and [`TOKEN`].
    fn env(&self) -> [(&'static str, std::ffi::OsString); 2] {
        [
            ("ASK_USER_STATE_DIR", self.state().into_os_string()),
            ("ASK_USER_MCP_TOKEN", TOKEN.into()),
        ]
    }

    /// A server's arguments: the config that asks the inbox.
    fn args(&self) -> [String; 2] {
        let config = self.dir.path().join("agent.toml");
        ["--config".to_owned(), config.display().to_string()]
    }

    /// The id of the next new question (blocks, at most [`BOUND`]).
    fn new_question(&self) -> String {
        let hook = self
            .hooks
            .recv_timeout(BOUND)
            .expect("a new question's webhook");
        assert!(hook.head.starts_with("POST /hook"), "{hook:?}");
        let body: Value = serde_json::from_str(&hook.body).unwrap();
        body["id"].as_str().expect("the question's id").to_owned()
    }

    /// `ask-user mcp --http` asking this inbox, with [`TOKEN`] (`keyed`)
    /// or a token of its own.
    fn server(&self, keyed: bool) -> Server {
        let env = self.env();
        let env: Vec<(&str, &std::ffi::OsStr)> = env
            .iter()
            .take(if keyed { 2 } else { 1 })
            .map(|(name, value)| (*name, value.as_os_str()))
            .collect();
        let args = self.args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Server::start_with(&args, &env)
    }

    /// `ask-user inbox answer ID` with `answers`.
    fn answer(&self, id: &str, answers: &str) {
        let file = self.dir.path().join("answers.json");
        std::fs::write(&file, answers).unwrap();
        let answered = ask_user(&self.state())
            .args(["inbox", "answer", id, "--answers"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(answered.status.success(), "{answered:?}");
    }
}

impl Drop for InboxBehind {
    fn drop(&mut self) {
        let _ = self.inbox.kill();
        let _ = self.inbox.wait();
    }
}

/// `ask-user` with its state in `state`.
fn ask_user(state: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .env("ASK_USER_STATE_DIR", state)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    command
}

/// `inbox list --json` (`--all` too when `all`).
async fn inbox_list(state: &std::path::Path, all: bool) -> Vec<Value> {
    let mut command = ask_user(state);
    command.args(["inbox", "list", "--json"]);
    if all {
        command.arg("--all");
    }
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    list["questions"].as_array().unwrap().clone()
}

/// A task lives in the server, not in the session that made it: another
/// session of a client that takes tasks finds it, answers its form, and
/// gets its result.
#[tokio::test]
async fn a_task_is_found_answered_and_ended_from_another_session() {
    let server = Server::start(&["--config", "/dev/null"]);
    let tasks = json!({"elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let first = Session::open_with(&server, tasks.clone()).await;
    let mut call = first
        .post(serde_json::from_str(ONE_QUESTION).unwrap())
        .await;
    let made = read_from(&mut call, "\"id\":1").await;
    let made = reply_in(&made, 1);
    assert_eq!(made["result"]["resultType"], "task", "{made}");
    let task = made["result"]["taskId"].as_str().expect("a task id");

    let second = Session::open_with(&server, tasks).await;
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": task}});
    let asking = second.ask(get.clone()).await;
    assert_eq!(asking["result"]["status"], "input_required", "{asking}");
    let (key, form) = asking["result"]["inputRequests"]
        .as_object()
        .and_then(|requests| requests.iter().next())
        .expect("the form in the task");
    assert_eq!(form["params"]["message"], "Ship it?", "{form}");
    let update = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/update", "params": {
        "taskId": task,
        "inputResponses": {key: {"action": "accept", "content": {"q01_go": "yes"}}}}});
    let updated = second.ask(update).await;
    assert!(updated.get("result").is_some(), "{updated}");
    let done = second.until_ended(get).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains(r#""custom":"yes""#), "{done}");
}

/// The JSON-RPC message with `id` among the events of `text`.
fn reply_in(text: &str, id: u64) -> Value {
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no reply {id} in {text}"))
}

/// One MCP session, spoken to in raw HTTP.
struct Session {
    client: Client<HttpConnector, Full<Bytes>>,
    url: String,
    token: String,
    id: String,
}

impl Session {
    /// Shakes hands as a client of 2025-11-25 that shows forms.
    async fn open(server: &Server) -> Session {
        Session::open_with(server, json!({"elicitation": {"form": {}}})).await
    }

    /// Shakes hands as a client of 2025-11-25 with `capabilities`.
    async fn open_with(server: &Server, capabilities: Value) -> Session {
        let mut session = Session {
            client: Client::builder(TokioExecutor::new()).build_http(),
            url: format!("http://{}/mcp", server.address),
            token: server.token.clone(),
            id: String::new(),
        };
        let mut hello = session
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "0"}}}),
            )
            .await;
        session.id = hello.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        read_from(&mut hello, "\"id\":0").await;
        // To its end, as a client does: its connection goes back to the pool.
        while let Some(Ok(_)) = hello.body_mut().frame().await {}
        session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    fn request(&self, method: &str) -> hyper::http::request::Builder {
        let request = Request::builder()
            .method(method)
            .uri(&self.url)
            .header("authorization", format!("Bearer {}", self.token))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        match self.id.as_str() {
            "" => request,
            id => request.header("mcp-session-id", id),
        }
    }

    /// Posts `message`.
    async fn post(&self, message: Value) -> Response<Incoming> {
        let request = self
            .request("POST")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(message.to_string())))
            .unwrap();
        self.client.request(request).await.unwrap()
    }

    /// Posts the request `message` and returns its reply.
    async fn ask(&self, message: Value) -> Value {
        let id = message["id"].as_u64().expect("a request");
        let mut response = self.post(message).await;
        let text = read_from(&mut response, &format!("\"id\":{id}")).await;
        reply_in(&text, id)
    }

    /// Sends `get` (`tasks/get`) every 50 ms, as a client polls, until
    /// the task has ended (at most [`BOUND`]); its last reply.
    async fn until_ended(&self, get: Value) -> Value {
        let polled = async {
            loop {
                let got = self.ask(get.clone()).await;
                let status = got["result"]["status"].as_str();
                if !status.is_some_and(|s| ["input_required", "working"].contains(&s)) {
                    return got;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(BOUND, polled)
            .await
            .expect("the task ends")
    }

    /// Resumes the stream after event `last_id` (`GET` with `Last-Event-ID`).
    async fn resume(&self, last_id: &str) -> Response<Incoming> {
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
        let request = self
            .request("GET")
            .header("last-event-id", last_id)
            .body(Empty::new())
            .unwrap();
        client.request(request).await.unwrap()
    }
}

/// Reads `response`'s body, within [`BOUND`], until its text contains
/// `wanted`; returns the text read.
async fn read_from(response: &mut Response<Incoming>, wanted: &str) -> String {
    let mut text = String::new();
    let reading = async {
        while !text.contains(wanted) {
            match response.body_mut().frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        text.push_str(&String::from_utf8_lossy(data));
                    }
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(BOUND, reading).await;
    assert!(text.contains(wanted), "no {wanted} in:\n{text}");
    text
}

#[test]
fn a_token_too_short_to_be_secret_is_refused_saying_what_to_give() {
    let output = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args(["mcp", "--http", "127.0.0.1:0", "--config", "/dev/null"])
        .env("ASK_USER_MCP_TOKEN", "hunter2")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("ASK_USER_MCP_TOKEN must be at least 32 visible ASCII characters"),
        "{said}"
    );
}
