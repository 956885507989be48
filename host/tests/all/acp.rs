//! The `acp` answerer against the official ACP client library
//! (`@agentclientprotocol/sdk`, `host/tests/npm/acp-client.mjs`): this
//! test is an agent host that speaks ACP (on the `agent-client-protocol`
//! crate) and runs the real component, its model's tool call being the
//! prompt's text. Each session gets an `AcpAnswerer` ahead of a script;
//! the client answers the form, declines it, stops the turn while it is
//! open, or declares no forms at all.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, ContentChunk, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    SessionId, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::{Agent, ByteStreams, on_receive_notification, on_receive_request};
use ask_user::answerers::acp::AcpAnswerer;
use ask_user::answerers::ready;
use ask_user::answerers::script::ScriptAnswerer;
use ask_user::{AgentHandle, AnswererEntry, AnswererHandle, Host, HostBuilder, Placement};
use serde_json::{Value, json};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

/// What the script behind the editor's form answers: not what the form is
/// given, so each answer says where it came from.
const SCRIPTED: &str = r#"{"answers":[
    {"id":"target","selected":["Production"]},
    {"id":"checks","selected":["Load test"]},
    {"id":"note","custom":"from the script"}]}"#;

/// One ACP session: its agent, its answerer, its turn.
struct Session {
    agent: AgentHandle,
    _form: AnswererHandle,
    turn: CancellationToken,
}

/// The agent host's state, shared by its handlers.
struct AgentHost {
    host: Host,
    capabilities: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Session>>,
}

/// The deploy example's batch, as the model's arguments.
fn deploy() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/deploy.json");
    std::fs::read_to_string(path).unwrap()
}

/// Runs the client in `mode` against the agent host; what it reported.
fn run(mode: &str, content: Option<Value>) -> Value {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let host = HostBuilder::new()
            .answerer(AnswererEntry::new(
                "script",
                ready(ScriptAnswerer::from_json(SCRIPTED).unwrap()),
            ))
            .build()
            .await
            .unwrap();
        let state = Arc::new(AgentHost {
            host,
            capabilities: Mutex::default(),
            sessions: Mutex::default(),
        });
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        let npm = ask_user_test_support::npm::folder();
        let mut client = tokio::process::Command::new(npm.join("node_modules/.bin/node"))
            .arg(npm.join("acp-client.mjs"))
            .arg(&report)
            .arg(mode)
            .arg(deploy())
            .args(content.map(|c| c.to_string()))
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the ACP client");
        let transport = ByteStreams::new(
            client.stdin.take().unwrap().compat_write(),
            client.stdout.take().unwrap().compat(),
        );
        let served = serve(state.clone(), transport);
        tokio::time::timeout(Duration::from_secs(60), served)
            .await
            .expect("the client ends its session within a minute")
            .expect("the ACP connection ends cleanly");
        let status = tokio::time::timeout(Duration::from_secs(30), client.wait())
            .await
            .expect("the client exits after its session")
            .unwrap();
        assert!(status.success(), "the ACP client failed: {status}");
        state.host.close().await;
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap()
    })
}

/// Serves one client until it hangs up: initialize, a session per
/// `session/new` (its form ahead of the host's chain), a tool call per
/// prompt (run in a task: the connection must stay free for the form's
/// answer), `session/cancel` cancelling the turn.
async fn serve(
    state: Arc<AgentHost>,
    transport: impl agent_client_protocol::ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let (init, new, prompt, cancel) = (state.clone(), state.clone(), state.clone(), state);
    Agent
        .v1()
        .name("ask-user-acp-test-agent")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                *init.capabilities.lock().unwrap() = request.client_capabilities.clone();
                responder.respond(InitializeResponse::new(request.protocol_version))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: NewSessionRequest, responder, cx| {
                let id = format!("session-{}", new.sessions.lock().unwrap().len() + 1);
                let agent = new.host.agents().register_root(id.clone(), None);
                let capabilities = new.capabilities.lock().unwrap().clone();
                let form = AcpAnswerer::new(cx.clone(), &capabilities, SessionId::new(id.clone()));
                let form = new.host.seam().waterfall().register(
                    form,
                    Placement {
                        scope: Some(id.clone()),
                        prepend: true,
                        ..Placement::default()
                    },
                );
                let session = Session {
                    agent,
                    _form: form,
                    turn: CancellationToken::new(),
                };
                new.sessions.lock().unwrap().insert(id.clone(), session);
                responder.respond(NewSessionResponse::new(SessionId::new(id)))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let id = request.session_id.clone();
                let (agent, turn) = {
                    let mut sessions = prompt.sessions.lock().unwrap();
                    let session = sessions.get_mut(&*id.0).expect("a session of ours");
                    session.turn = CancellationToken::new();
                    (session.agent.clone(), session.turn.clone())
                };
                let arguments = match request.prompt.first() {
                    Some(ContentBlock::Text(text)) => text.text.clone(),
                    other => panic!("the prompt is the tool's arguments, not {other:?}"),
                };
                let host = prompt.clone();
                let connection = cx.clone();
                cx.spawn(async move {
                    let result = host.host.runtime().call(&agent, &turn, &arguments).await;
                    // The model's view of the result, and its code for the test.
                    let said = json!({"code": result.code(), "text": result.text()});
                    let text = ContentBlock::from(said.to_string());
                    connection.send_notification(SessionNotification::new(
                        id,
                        SessionUpdate::AgentMessageChunk(ContentChunk::new(text)),
                    ))?;
                    let stop = if turn.is_cancelled() {
                        StopReason::Cancelled
                    } else {
                        StopReason::EndTurn
                    };
                    responder.respond(PromptResponse::new(stop))
                })
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |request: CancelNotification, _cx| {
                if let Some(session) = cancel.sessions.lock().unwrap().get(&*request.session_id.0) {
                    session.turn.cancel();
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}

/// The tool's result as the agent told it: its code (none for answers)
/// and its text.
fn result(report: &Value) -> (Value, String) {
    let message = report["message"].as_str().expect("the agent's message");
    let said: Value = serde_json::from_str(message).unwrap();
    (
        said["code"].clone(),
        said["text"].as_str().unwrap().to_owned(),
    )
}

/// The answers in the tool's result text.
fn answers(report: &Value) -> Value {
    let (code, text) = result(report);
    assert_eq!(code, Value::Null, "answers, not an error: {text}");
    serde_json::from_str::<Value>(&text).unwrap()["answers"].clone()
}

#[test]
fn the_editors_form_answers_the_batch_in_its_session() {
    let report = run(
        "accept",
        Some(json!({
            "q01_target": "Staging (Recommended)",
            "q02_checks": ["Unit tests", "Integration tests"],
            "q03_note": "typed in the editor",
        })),
    );
    let forms = report["forms"].as_array().unwrap();
    assert_eq!(forms.len(), 1, "one form for the batch: {report}");
    let form = &forms[0];
    assert_eq!(form["mode"], "form");
    assert_eq!(form["sessionId"], "session-1");
    let schema = &form["requestedSchema"];
    let keys: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "q01_target",
            "q01_target_own",
            "q02_checks",
            "q02_checks_own",
            "q03_note"
        ],
        "the fields in question order: {schema}"
    );
    assert_eq!(
        schema["properties"]["q02_checks"]["type"], "array",
        "a multi-select question is a list in an ACP form: {schema}"
    );
    assert_eq!(
        form["message"],
        "3 questions. Answer what you can; leave the rest empty to skip them."
    );
    assert_eq!(
        answers(&report),
        json!([
            {"id": "target", "selected": ["Staging (Recommended)"]},
            {"id": "checks", "selected": ["Unit tests", "Integration tests"]},
            {"id": "note", "selected": [], "custom": "typed in the editor"},
        ]),
        "the model gets exactly the form's answers: {report}"
    );
    assert_eq!(report["stopReason"], "end_turn");
}

#[test]
fn a_declined_form_ends_the_ask_cancelled_and_nothing_else_answers() {
    let report = run("decline", None);
    assert_eq!(report["forms"].as_array().unwrap().len(), 1);
    let (code, text) = result(&report);
    assert_eq!(code, "ASK_CANCELLED", "{text}");
    assert!(text.contains("declined the form"), "{text}");
    assert_eq!(report["stopReason"], "end_turn");
}

#[test]
fn stopping_the_turn_withdraws_the_open_form_from_the_editor() {
    let report = run("cancel", None);
    assert_eq!(report["forms"].as_array().unwrap().len(), 1);
    assert_eq!(
        report["withdrawn"], "cancel_request",
        "the form got $/cancel_request: {report}"
    );
    let (code, text) = result(&report);
    assert_eq!(code, "ASK_ABORTED", "{text}");
    assert_eq!(report["stopReason"], "cancelled");
}

#[test]
fn a_client_without_forms_is_passed_over_for_the_rest_of_the_chain() {
    let report = run("no-forms", None);
    assert_eq!(report["forms"], json!([]), "no form was sent: {report}");
    assert_eq!(
        answers(&report),
        json!([
            {"id": "target", "selected": ["Production"]},
            {"id": "checks", "selected": ["Load test"]},
            {"id": "note", "selected": [], "custom": "from the script"},
        ]),
        "the script answered: {report}"
    );
    assert_eq!(report["stopReason"], "end_turn");
}

/// An editor that fails the form request (a JSON-RPC error) is passed over
/// as one without forms is: the rest of the chain answers. The examples in
/// Python and JavaScript keep the same rule (their tests).
#[test]
fn a_client_that_fails_the_form_is_passed_over_for_the_rest_of_the_chain() {
    let report = run("fail", None);
    assert_eq!(
        report["forms"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(
        answers(&report)[2],
        json!({"id": "note", "selected": [], "custom": "from the script"}),
        "the script answered: {report}"
    );
    assert_eq!(report["stopReason"], "end_turn");
}
