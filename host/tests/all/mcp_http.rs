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
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let config = dir.path().join("agent.toml");
    std::fs::write(
        &config,
        "[mcp]\nforms = \"never\"\n\n[[answerer]]\nkind = \"inbox\"\n",
    )
    .unwrap();
    // The inbox's webhook tells of each new question: the test waits on it.
    let (hooks_at, hooks) = hooks::hook_server();
    let inbox_config = dir.path().join("inbox.toml");
    std::fs::write(
        &inbox_config,
        format!("[inbox.notify]\nwebhook = \"{hooks_at}/hook\"\n"),
    )
    .unwrap();
    let new_question = || {
        let hook = hooks.recv_timeout(BOUND).expect("a new question's webhook");
        assert!(hook.head.starts_with("POST /hook"), "{hook:?}");
        let body: Value = serde_json::from_str(&hook.body).unwrap();
        body["id"].as_str().expect("the question's id").to_owned()
    };
    let mut inbox = ask_user(&state)
        .args(["inbox", "serve", "--config"])
        .arg(&inbox_config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = http_server::child::said_on_stderr(&mut inbox, "the inbox serves", BOUND);
    let _inbox = KillOnDrop(&mut inbox);
    said.unwrap_or_else(|why| panic!("the inbox did not start: {why}"));
    let token = "restart-survival-token-0123456789abcdef";
    let env = [
        ("ASK_USER_STATE_DIR", state.as_os_str()),
        ("ASK_USER_MCP_TOKEN", std::ffi::OsStr::new(token)),
    ];
    let args = ["--config", config.to_str().unwrap()];
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params":
        {"name": "ask_user_question", "arguments": {"questions": [{"id": "go",
        "question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}]}}});

    // The server names the variable; the token never reaches its log.
    let first = Server::start_with(&args, &env);
    assert_eq!(first.token, token);
    assert!(
        first.announced.contains("Bearer $ASK_USER_MCP_TOKEN") && !first.announced.contains(token),
        "{}",
        first.announced
    );
    let session = Session::open(&first).await;
    let waiting_call = session.post(call.clone()).await;
    let question = tokio::task::block_in_place(new_question);
    first.kill9();
    drop(waiting_call);

    // Answered while no server runs.
    let answers = dir.path().join("answers.json");
    std::fs::write(
        &answers,
        r#"{"answers": [{"id": "go", "selected": ["Yes"]}]}"#,
    )
    .unwrap();
    let answered = ask_user(&state)
        .args(["inbox", "answer", &question, "--answers"])
        .arg(&answers)
        .output()
        .unwrap();
    assert!(answered.status.success(), "{answered:?}");

    let again = Server::start_with(&args, &env);
    let session = Session::open(&again).await;
    let mut result = session.post(call.clone()).await;
    let text = read_from(&mut result, "\"id\":1,").await;
    assert!(text.contains(r#"\"selected\":[\"Yes\"]"#), "{text}");
    let all = inbox_list(&state, true).await;
    assert_eq!(all.len(), 1, "the call found its question: {all:?}");

    // Another token: another server's call, never the question of this one.
    let stranger = Server::start_with(&args, &[env[0]]);
    let session = Session::open(&stranger).await;
    let _asking = session.post(call).await;
    let stranger_question = tokio::task::block_in_place(new_question);
    assert_ne!(stranger_question, question);
    assert_eq!(inbox_list(&state, true).await.len(), 2);
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

/// Kills the child (`kill -9`) when dropped.
struct KillOnDrop<'a>(&'a mut Child);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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

/// One MCP session, spoken to in raw HTTP.
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
    // Polled as a client does, for at most BOUND.
    let polled = async {
        loop {
            let got = second.ask(get.clone()).await;
            if !["input_required", "working"].contains(&got["result"]["status"].as_str().unwrap()) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let done = tokio::time::timeout(BOUND, polled)
        .await
        .expect("the task ends");
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
