//! `ask-user mcp --http` spoken to in raw HTTP: what its clients see when a
//! stream drops or the server stops.

#[path = "support/http_server.rs"]
mod http_server;

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
        let mut session = Session {
            client: Client::builder(TokioExecutor::new()).build_http(),
            url: format!("http://{}/mcp", server.address),
            token: server.token.clone(),
            id: String::new(),
        };
        let mut hello = session
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
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
