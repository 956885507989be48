//! The bridge answerer with real peers: the example Python bridge, small
//! misbehaving Python peers, and a Unix socket peer.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use ask_user::answerers::bridge::{BridgeAnswerer, MAX_FRAME_BYTES};
use ask_user::{Placement, ToolResult};
use ask_user_tests::{Behaviour, Harness, one_question, wait_until};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

const HANG_GUARD: Duration = Duration::from_secs(20);

fn example_bridge() -> Command {
    let mut command = Command::new("python3");
    command.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/bridge.py"
    ));
    command
}

/// A Python peer: `body` runs for every frame, with `frame` and `send`.
fn python_peer(body: &str) -> Command {
    let program = format!(
        "import json, sys\n\
         def send(f):\n    sys.stdout.write(json.dumps(f) + '\\n'); sys.stdout.flush()\n\
         for line in sys.stdin:\n    frame = json.loads(line)\n{}",
        body.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    );
    let mut command = Command::new("python3");
    command.arg("-c").arg(program);
    command
}

async fn with_bridge(command: Command) -> Harness {
    let h = Harness::new().await;
    let bridge = BridgeAnswerer::spawn(command).await.unwrap();
    h.seam().waterfall().register(bridge, Placement::default());
    h
}

async fn call(h: &Harness, arguments: Value) -> ToolResult {
    tokio::time::timeout(HANG_GUARD, h.call(arguments))
        .await
        .expect("the call never hangs")
}

#[tokio::test]
async fn the_example_bridge_answers_with_the_recommended_option() {
    let h = with_bridge(example_bridge()).await;
    let result = call(&h, one_question(&["Keep (Recommended)", "Drop"])).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"q","selected":["Keep (Recommended)"]}]}"#
    );
}

#[tokio::test]
async fn the_example_bridge_passes_when_nothing_is_recommended() {
    let h = with_bridge(example_bridge()).await;
    let next = h.answerer(Behaviour::ClaimFirst);
    let result = call(&h, one_question(&["Keep", "Drop"])).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"q","selected":["Keep"]}]}"#
    );
    assert_eq!(next.calls(), 1);
}

#[tokio::test]
async fn the_peer_gets_the_frames_of_the_spec() {
    let h = with_bridge(python_peer(
        "if frame['type'] == 'waterfall':\n    \
             send({'eventId': frame['eventId'], 'outcome': {'kind': 'rejected', 'error': \
                  {'name': 'UserQuestionError', 'message': json.dumps(seen + [frame]), 'code': 'ASK_CANCELLED'}}})\n\
         else:\n    seen = [frame]",
    ))
    .await;
    let result = call(&h, one_question(&["A"])).await;
    assert_eq!(result.code(), Some("ASK_CANCELLED"));
    let frames: Value =
        serde_json::from_str(result.text().strip_prefix("Error: ").unwrap()).unwrap();
    assert_eq!(frames[0]["type"], "ready");
    assert!(frames[0]["clientId"].is_string());
    assert_eq!(frames[1]["type"], "waterfall");
    assert_eq!(frames[1]["agentId"], "root");
    assert!(frames[1]["eventId"].is_string());
    assert_eq!(
        frames[1]["request"],
        json!({"questions":[{"id":"q","question":"Which one?","options":[{"label":"A"}]}]})
    );
}

/// A peer that dies with a question open passes it on, as one that died
/// before it arrived does (SPEC §5), so the outcome never depends on when.
#[tokio::test]
async fn a_peer_that_dies_passes_its_question_and_later_ones_on() {
    let h = with_bridge(python_peer(
        "if frame['type'] == 'waterfall':\n    sys.exit(3)",
    ))
    .await;
    let next = h.answerer(Behaviour::ClaimFirst);
    for n in 1..=2 {
        let result = call(&h, one_question(&["A"])).await;
        assert!(!result.is_error, "{result:?}");
        assert_eq!(next.calls(), n);
    }
}

/// A bridge that exits at once: every ask has the same outcome, whether
/// the host noticed before the question went out, while writing it, or
/// after.
#[tokio::test]
async fn a_bridge_that_exits_at_once_always_passes_on() {
    for _ in 0..10 {
        let h = with_bridge(std::process::Command::new("true")).await;
        let next = h.answerer(Behaviour::ClaimFirst);
        let result = call(&h, one_question(&["A"])).await;
        assert!(!result.is_error, "{result:?}");
        assert_eq!(next.calls(), 1);
    }
}

#[tokio::test]
async fn a_malformed_frame_fails_the_question_it_names() {
    let h = with_bridge(python_peer(
        "if frame['type'] == 'waterfall':\n    send({'eventId': frame['eventId'], 'outcome': {'kind': 'maybe'}})",
    ))
    .await;
    let result = call(&h, one_question(&["A"])).await;
    assert_eq!(result.error.as_ref().unwrap().name, "BridgeError");
    assert!(
        result.text().contains("malformed frame"),
        "{}",
        result.text()
    );
    assert!(result.text().contains("maybe"), "{}", result.text());
}

#[tokio::test]
async fn a_frame_that_names_no_event_fails_what_is_pending() {
    let h = with_bridge(python_peer(
        "if frame['type'] == 'waterfall':\n    sys.stdout.write('this is not json\\n'); sys.stdout.flush()",
    ))
    .await;
    let result = call(&h, one_question(&["A"])).await;
    assert!(
        result.text().contains("malformed frame"),
        "{}",
        result.text()
    );
    assert!(
        result.text().contains("this is not json"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn an_aborted_ask_is_cancelled_at_the_peer_and_its_late_outcome_ignored() {
    // Holds the first event until it is cancelled, then answers it late; a
    // later event is answered at once, saying whether the cancel arrived.
    let h = Arc::new(Harness::new().await);
    let bridge = Arc::new(
        BridgeAnswerer::spawn(python_peer(
            "if frame['type'] == 'waterfall' and frame['eventId'] != 'e1':\n    \
                 send({'eventId': frame['eventId'], 'outcome': {'kind': 'result', 'value': \
                      {'answers': [{'id': 'q', 'selected': [], 'custom': 'saw ' + cancelled}]}}})\n\
             elif frame['type'] == 'cancel':\n    \
                 cancelled = frame['eventId']\n    \
                 send({'eventId': frame['eventId'], 'outcome': {'kind': 'result', 'value': \
                      {'answers': [{'id': 'q', 'selected': ['A']}]}}})\n\
             elif frame['type'] == 'ready':\n    \
                 cancelled = 'nothing'",
        ))
        .await
        .unwrap(),
    );
    h.seam()
        .waterfall()
        .register_arc(bridge.clone(), Placement::default());
    let signal = CancellationToken::new();
    let first = {
        let (h, signal) = (h.clone(), signal.clone());
        tokio::spawn(async move {
            h.runtime
                .call(&h.root, &signal, &one_question(&["A", "B"]).to_string())
                .await
        })
    };
    wait_until("the first ask reaches the bridge", || bridge.pending() == 1).await;
    signal.cancel();
    let first = tokio::time::timeout(HANG_GUARD, first)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.code(), Some("ASK_ABORTED"));
    // The late answer to e1 (sent before the peer reads e2) must not
    // answer e2.
    let second = call(&h, one_question(&["A", "B"])).await;
    assert_eq!(
        second.text(),
        r#"{"answers":[{"id":"q","selected":[],"custom":"saw e1"}]}"#
    );
}

#[tokio::test]
async fn a_socket_peer_answers_and_an_oversized_frame_is_refused() {
    let dir = std::env::temp_dir().join(format!("ask-user-bridge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("peer.sock");
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let peer = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let ready: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(ready["type"], "ready");
        // First ask: a proper answer.
        let frame: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        let reply = json!({"eventId": frame["eventId"], "outcome": {"kind":"result","value":{"answers":[{"id":"q","selected":[],"custom":"over the socket"}]}}});
        write
            .write_all(format!("{reply}\n").as_bytes())
            .await
            .unwrap();
        // Second ask: a line longer than any frame may be.
        let _ = lines.next_line().await.unwrap().unwrap();
        let huge = "x".repeat(MAX_FRAME_BYTES + 10);
        let _ = write.write_all(format!("{huge}\n").as_bytes()).await;
        // Keep the connection open: the host must not wait for it anyway.
        std::future::pending::<()>().await;
    });
    let h = Harness::new().await;
    let bridge = BridgeAnswerer::connect(&path).await.unwrap();
    h.seam().waterfall().register(bridge, Placement::default());
    let result = call(&h, one_question(&["A"])).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"q","selected":[],"custom":"over the socket"}]}"#
    );
    let result = call(&h, one_question(&["A"])).await;
    assert_eq!(result.error.as_ref().unwrap().name, "BridgeError");
    assert!(
        result.text().contains("broke the stream"),
        "{}",
        result.text()
    );
    peer.abort();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_bridge_that_cannot_start_says_so() {
    let error = match BridgeAnswerer::spawn(Command::new("/nonexistent/bridge")).await {
        Err(error) => error.to_string(),
        Ok(_) => panic!("started"),
    };
    assert!(
        error.contains("cannot start the bridge `/nonexistent/bridge`"),
        "{error}"
    );
}
