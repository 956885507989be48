//! `ask-user mcp` on stdio with a raw JSON-RPC client: what no well-made
//! client sends still ends every call.

#[path = "support/mcp_peer.rs"]
mod mcp_peer;

use std::process::Command;
use std::time::Duration;

use mcp_peer::McpPeer;
use serde_json::json;

/// The longest any state is waited for.
const BOUND: Duration = Duration::from_secs(60);

#[test]
fn a_form_answer_too_large_to_take_ends_the_call_with_a_clear_error() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .arg("mcp")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    let mut peer = McpPeer::start(command, json!({"elicitation": {"form": {}}}));
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
        "result": {"action": "accept", "content": {"note": huge}}});
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
        "result": {"action": "accept", "content": {"note": "no"}}}));
    let reply = peer.reply(2, BOUND).expect("the next call ends");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        r#"{"answers":[{"id":"note","selected":[],"custom":"no"}]}"#
    );
}
