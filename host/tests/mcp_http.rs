//! `ask-user mcp --http` spoken to in raw HTTP: what its clients see when it
//! stops.

#[path = "support/http_server.rs"]
mod http_server;

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use http_server::Server;

/// The longest any state is waited for.
const BOUND: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_signal_answers_open_calls_aborted_on_their_streams_then_exits() {
    let mut server = Server::start(&["--config", "/dev/null"]);
    let client = Client::builder(TokioExecutor::new()).build_http();
    let post = |session: Option<&str>, body: Value| {
        let mut request = Request::post(format!("http://{}/mcp", server.address))
            .header("authorization", format!("Bearer {}", server.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        client.request(request)
    };
    let hello = post(
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "raw", "version": "0"}}}),
    )
    .await
    .unwrap();
    let session = hello.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut hello = hello;
    read_from(&mut hello, "\"id\":0").await;
    // To its end, as a client does: its connection goes back to the pool.
    while let Some(Ok(_)) = hello.body_mut().frame().await {}
    post(
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();
    let mut call = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "ask_user_question",
            "arguments": {"questions": [{"id": "go", "question": "Ship it?"}]}}}),
    )
    .await
    .unwrap();
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

/// Reads `response`'s body, within [`BOUND`], until its text contains
/// `wanted`; returns the text read.
async fn read_from(response: &mut Response<hyper::body::Incoming>, wanted: &str) -> String {
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
