//! `ask-user mcp` with rmcp's own client over an in-process transport: the
//! tool listed, forms answered, declined, cancelled and withdrawn, on both
//! protocol versions.

use std::sync::{Arc, Mutex};

use ask_user::HostBuilder;
use ask_user::mcp::McpServer;
use ask_user_tests::{PATIENCE, wait_until};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, InputRequest,
    InputResponses, ProtocolVersion,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, ServiceExt};
use serde_json::{Value, json};

/// What the test client's user does with a form.
#[derive(Clone)]
enum User {
    Fills(Value),
    Declines,
    Cancels,
    /// Never answers (the form stays open).
    Walks,
    /// Accepts an offered page (and answers there, see the test).
    GoesToPage,
}

/// A client with a scripted user, which records the forms it was shown and
/// the requests the server withdrew.
#[derive(Clone)]
struct TestClient {
    version: ProtocolVersion,
    elicits: bool,
    user: User,
    forms: Arc<Mutex<Vec<Value>>>,
    cancelled: Arc<Mutex<Vec<CancelledNotificationParam>>>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities = match (self.elicits, &self.user) {
            // A client that can also send its user to a page.
            (true, User::GoesToPage) => {
                serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}}})).unwrap()
            }
            (true, _) => ClientCapabilities::builder().enable_elicitation().build(),
            (false, _) => ClientCapabilities::default(),
        };
        ClientConfig::new(capabilities, Implementation::new("ask-user-tests", "0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.forms
            .lock()
            .unwrap()
            .push(serde_json::to_value(&request).unwrap());
        Ok(match &self.user {
            User::Fills(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            User::Declines => ElicitResult::new(ElicitationAction::Decline),
            User::Cancels => ElicitResult::new(ElicitationAction::Cancel),
            User::Walks => std::future::pending().await,
            User::GoesToPage => ElicitResult::new(ElicitationAction::Accept),
        })
    }

    async fn on_cancelled(
        &self,
        params: CancelledNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.cancelled.lock().unwrap().push(params);
    }
}

struct Session {
    client: RunningService<RoleClient, TestClient>,
    handler: TestClient,
}

/// The protocol versions of the MCP spec this server speaks.
const VERSIONS: [ProtocolVersion; 2] =
    [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28];

async fn connect(version: ProtocolVersion, elicits: bool, user: User) -> Session {
    connect_to(HostBuilder::new(), version, elicits, user).await
}

async fn connect_to(
    host: HostBuilder,
    version: ProtocolVersion,
    elicits: bool,
    user: User,
) -> Session {
    let host = host.build().await.expect("the host builds");
    let server = McpServer::new(host.runtime().clone(), host.pages()).unwrap();
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(service) = server.serve(server_end).await {
            let _ = service.waiting().await;
        }
        host.close().await;
    });
    let handler = TestClient {
        version: version.clone(),
        elicits,
        user,
        forms: Arc::default(),
        cancelled: Arc::default(),
    };
    let client = if version >= ProtocolVersion::V_2026_07_28 {
        // The 2026-07-28 lifecycle: `server/discover`, no handshake.
        let mode = ClientLifecycleMode::Discover {
            preferred_versions: vec![version],
        };
        handler.clone().serve_with_lifecycle(client_end, mode).await
    } else {
        handler.clone().serve(client_end).await
    };
    let client = client.expect("the client connects");
    Session { client, handler }
}

fn deploy() -> CallToolRequestParams {
    let arguments: Value =
        serde_json::from_str(include_str!("../../../examples/deploy.json")).unwrap();
    CallToolRequestParams::new("ask_user_question")
        .with_arguments(arguments.as_object().unwrap().clone())
}

fn filled() -> Value {
    json!({"q01_target": "Production", "q02_checks": ["Unit tests", "Load test"], "q02_checks_own": "smoke", "q03_note": "Retries"})
}

const ANSWERS: &str = r#"{"answers":[{"id":"target","selected":["Production"]},{"id":"checks","selected":["Unit tests","Load test"],"custom":"smoke"},{"id":"note","selected":[],"custom":"Retries"}]}"#;

fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

async fn call(session: &Session, params: CallToolRequestParams) -> CallToolResult {
    tokio::time::timeout(PATIENCE, session.client.call_tool(params))
        .await
        .expect("the call never hangs")
        .expect("a tool result")
}

#[tokio::test]
async fn the_tool_is_listed_with_the_components_schemas() {
    let session = connect(ProtocolVersion::V_2025_11_25, true, User::Declines).await;
    let tools = session.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = serde_json::to_value(&tools[0]).unwrap();
    let definition: Value =
        serde_json::to_value(ask_user_tests::Harness::new().await.runtime.definition()).unwrap();
    assert_eq!(tool["name"], "ask_user_question");
    assert_eq!(tool["description"], definition["description"]);
    assert_eq!(tool["inputSchema"], definition["inputSchema"]);
    assert_eq!(tool["outputSchema"], definition["outputSchema"]);
    // It changes nothing on the machine: clients may call it unasked.
    assert_eq!(
        tool["annotations"],
        json!({"title": "Ask the user", "readOnlyHint": true, "destructiveHint": false,
               "openWorldHint": false})
    );
}

#[tokio::test]
async fn a_filled_form_answers_the_batch() {
    for version in VERSIONS {
        let session = connect(version.clone(), true, User::Fills(filled())).await;
        let result = call(&session, deploy()).await;
        assert_eq!(result.is_error, Some(false), "{version:?}: {result:?}");
        assert_eq!(text(&result), ANSWERS, "{version:?}");
        let forms = session.handler.forms.lock().unwrap().clone();
        assert_eq!(forms.len(), 1, "{version:?}: one form per batch");
        assert_eq!(forms[0]["mode"], "form");
        assert_eq!(
            forms[0]["requestedSchema"]["properties"]["q01_target"]["default"],
            "Staging (Recommended)"
        );
    }
}

#[tokio::test]
async fn declining_or_cancelling_the_form_is_ask_cancelled() {
    for (user, how) in [(User::Declines, "declined"), (User::Cancels, "cancelled")] {
        for version in VERSIONS {
            let session = connect(version.clone(), true, user.clone()).await;
            let result = call(&session, deploy()).await;
            assert_eq!(result.is_error, Some(true));
            let said = text(&result);
            assert!(
                said.starts_with("Error [ASK_CANCELLED]: the user "),
                "{said}"
            );
            assert!(said.contains(how), "{version:?}: {said}");
            let meta = serde_json::to_value(result.meta.unwrap()).unwrap();
            assert_eq!(
                meta,
                json!({"code": "ASK_CANCELLED", "name": "UserQuestionError"})
            );
        }
    }
}

#[tokio::test]
async fn a_label_the_form_did_not_offer_is_an_invalid_answer() {
    let session = connect(
        ProtocolVersion::V_2025_11_25,
        true,
        User::Fills(json!({"q01_target": "Moon"})),
    )
    .await;
    let said = text(&call(&session, deploy()).await);
    assert!(said.starts_with("Error [INVALID_ANSWER]"), "{said}");
    assert!(said.contains("\"Moon\""), "{said}");
}

#[tokio::test]
async fn a_client_that_cannot_show_forms_gets_no_provider_and_why() {
    let session = connect(ProtocolVersion::V_2025_11_25, false, User::Declines).await;
    let said = text(&call(&session, deploy()).await);
    assert!(said.starts_with("Error [NO_PROVIDER]"), "{said}");
    assert!(said.contains("cannot display a tool's questions"), "{said}");
    assert!(session.handler.forms.lock().unwrap().is_empty());
}

#[tokio::test]
async fn cancelling_the_call_withdraws_the_open_form() {
    let session = connect(ProtocolVersion::V_2025_11_25, true, User::Walks).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(deploy()));
    let handle = session
        .client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let forms = session.handler.forms.clone();
    wait_until("the form is shown", || forms.lock().unwrap().len() == 1).await;
    handle
        .cancel(Some("the user stopped the turn".into()))
        .await
        .unwrap();
    let cancelled = session.handler.cancelled.clone();
    wait_until("the server withdraws its form", || {
        !cancelled.lock().unwrap().is_empty()
    })
    .await;
    let reason = cancelled.lock().unwrap()[0].reason.clone();
    assert_eq!(reason.as_deref(), Some("the question was withdrawn"));
}

/// The first round of a 2026-07-28 call: the form and its requestState.
async fn first_round(session: &Session) -> (ElicitRequestParams, String) {
    let response = session.client.call_tool_once(deploy()).await.unwrap();
    let CallToolResponse::InputRequired(input) = response else {
        panic!("expected input_required, got {response:?}");
    };
    let mut requests = input.input_requests.unwrap();
    let Some(InputRequest::Elicitation(form)) = requests.remove("ask") else {
        panic!("no form under \"ask\"");
    };
    (form.params, input.request_state.expect("a requestState"))
}

fn responses(result: ElicitResult) -> InputResponses {
    [("ask".to_owned(), serde_json::to_value(result).unwrap())].into()
}

#[tokio::test]
async fn a_2026_client_gets_the_form_as_input_required_and_answers_on_retry() {
    let session = connect(ProtocolVersion::V_2026_07_28, true, User::Declines).await;
    let (form, state) = first_round(&session).await;
    let form = serde_json::to_value(form).unwrap();
    assert_eq!(form["mode"], "form");
    assert!(
        form["message"]
            .as_str()
            .unwrap()
            .starts_with("3 questions.")
    );
    let target = &form["requestedSchema"]["properties"]["q01_target"];
    assert_eq!(
        target["description"],
        "Where should this release be deployed?"
    );
    let accepted = ElicitResult::new(ElicitationAction::Accept).with_content(filled());
    let retry = deploy()
        .with_request_state(state)
        .with_input_responses(responses(accepted));
    let CallToolResponse::Complete(result) = session.client.call_tool_once(retry).await.unwrap()
    else {
        panic!("the retry did not complete");
    };
    assert_eq!(text(&result), ANSWERS);
}

#[tokio::test]
async fn a_request_state_for_other_arguments_or_another_server_is_refused() {
    let session = connect(ProtocolVersion::V_2026_07_28, true, User::Declines).await;
    let (_, state) = first_round(&session).await;
    let accepted = ElicitResult::new(ElicitationAction::Accept).with_content(filled());
    let mut other = deploy();
    other.arguments.as_mut().unwrap()["questions"][0]["question"] = json!("Somewhere else?");
    for params in [
        other.with_request_state(state.clone()),
        deploy().with_request_state(format!("{state}x")),
    ] {
        let params = params.with_input_responses(responses(accepted.clone()));
        let error = session.client.call_tool_once(params).await.unwrap_err();
        let said = error.to_string();
        assert!(said.contains("requestState was refused"), "{said}");
    }
    // A state from another server process (another key) is refused too.
    let elsewhere = connect(ProtocolVersion::V_2026_07_28, true, User::Declines).await;
    let params = deploy()
        .with_request_state(state)
        .with_input_responses(responses(accepted));
    assert!(elsewhere.client.call_tool_once(params).await.is_err());
}

#[tokio::test]
async fn an_unknown_tool_is_refused() {
    let session = connect(ProtocolVersion::V_2025_11_25, true, User::Declines).await;
    let error = session
        .client
        .call_tool(CallToolRequestParams::new("rm_rf"))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("there is no tool \"rm_rf\""),
        "{error}"
    );
}

/// A page of the web answerer, without a browser: opens its event stream at
/// `url` (token included), waits for the question, and answers it.
async fn answer_on_page(url: &str, answers: Value) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (address, token) = rest.split_once("/?token=").unwrap();
    let mut events = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "GET /events?token={token} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    );
    events.write_all(request.as_bytes()).await.unwrap();
    let mut seen = String::new();
    // One bound for the whole wait: the stream's keep-alives must not
    // restart it.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let event_id = loop {
        if let Some(at) = seen.find(r#""type":"waterfall""#) {
            let frame = &seen[at..];
            if let Some(start) = frame.find(r#""eventId":""#) {
                let id = &frame[start + 11..];
                if let Some(end) = id.find('"') {
                    break id[..end].to_owned();
                }
            }
        }
        let mut buffer = [0; 4096];
        let read = tokio::time::timeout_at(deadline, events.read(&mut buffer))
            .await
            .expect("the question reaches the page")
            .unwrap();
        assert_ne!(read, 0, "the page's stream ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    };
    let body =
        json!({"eventId": event_id, "outcome": {"kind": "result", "value": {"answers": answers}}})
            .to_string();
    let mut post = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "POST /answer HTTP/1.1\r\nHost: {address}\r\nx-ask-user-token: {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    post.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = post.read_to_end(&mut response).await;
    String::from_utf8_lossy(&response)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_client_that_opens_pages_is_sent_to_the_web_answerer_instead_of_a_form() {
    // No grace at all: the page still waits for the person the offer sent
    // there, however long they take to open it.
    let web = ask_user::answerers::web::WebConfig {
        grace: Some(std::time::Duration::ZERO),
        ..Default::default()
    };
    let host = HostBuilder::new().answerer(ask_user::AnswererEntry::new("web", Box::new(web)));
    let session = connect_to(host, ProtocolVersion::V_2025_11_25, true, User::GoesToPage).await;
    let client = session.client.peer().clone();
    let call = tokio::spawn(async move { client.call_tool(deploy()).await });
    let forms = session.handler.forms.clone();
    wait_until("the page is offered", || forms.lock().unwrap().len() == 1).await;
    let offer = forms.lock().unwrap()[0].clone();
    assert_eq!(offer["mode"], "url", "{offer}");
    let url = offer["url"].as_str().unwrap().to_owned();
    assert!(url.contains("/?token="), "{url}");
    assert!(
        offer["message"]
            .as_str()
            .unwrap()
            .contains("Answer on this page")
    );
    let answers = json!([
        {"id": "target", "selected": ["Production"]},
        {"id": "checks", "selected": ["Unit tests", "Load test"], "custom": "smoke"},
        {"id": "note", "selected": [], "custom": "Retries"}
    ]);
    let status = answer_on_page(&url, answers).await;
    assert!(status.contains(" 200 "), "{status}");
    let result = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the call ends")
        .unwrap()
        .unwrap();
    assert_eq!(text(&result), ANSWERS);
}
