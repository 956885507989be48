//! `ask-user mcp` and a client that takes calls as tasks (the MCP Tasks
//! extension), the official Rust SDK's client side of it (`rmcp`): the call
//! is a task at once, its status says where the question waits, the answer
//! completes it, and a cancelled task withdraws the question.

use std::path::Path;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    DetailedTask, ElicitResult, ElicitationAction, GetTaskParams, Implementation, InputRequest,
    TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::inbox::Inbox;

/// The longest any state is waited for.
const BOUND: Duration = Duration::from_secs(60);

/// `ask-user mcp` on stdio (`command`, with `config` as its config file),
/// served to a client of the SDK that declares tasks and, with `forms`,
/// forms.
async fn client(
    mut command: std::process::Command,
    config: Option<&Path>,
    forms: bool,
) -> RunningService<RoleClient, ClientConfig> {
    command.arg("mcp");
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    command
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    let mut capabilities = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    if forms {
        capabilities["elicitation"] = json!({"form": {}});
    }
    let capabilities: ClientCapabilities = serde_json::from_value(capabilities).unwrap();
    let config = ClientConfig::new(capabilities, Implementation::new("tasks-test", "1"));
    let server = TokioChildProcess::new(tokio::process::Command::from(command)).unwrap();
    config.serve(server).await.expect("the MCP handshake")
}

/// Calls the tool with `arguments`; the call must come back a task.
async fn call_as_task(peer: &Peer<RoleClient>, arguments: Value) -> String {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let call = CallToolRequestParams::new("ask_user_question").with_arguments(arguments);
    match peer.call_tool_once(call).await.expect("the call") {
        CallToolResponse::Task(task) => {
            assert_eq!(task.task.status, TaskStatus::Working, "{task:?}");
            task.task.task_id
        }
        other => panic!("the call was not made a task: {other:?}"),
    }
}

/// Polls the task `id` (every 50 ms, as its client would, at most
/// [`BOUND`]) until `holds`.
async fn poll_until(
    peer: &Peer<RoleClient>,
    id: &str,
    what: &str,
    holds: impl Fn(&DetailedTask) -> bool,
) -> DetailedTask {
    let polled = async {
        loop {
            let task = peer
                .get_task(GetTaskParams::new(id))
                .await
                .expect("tasks/get")
                .task;
            if holds(&task) {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(BOUND, polled)
        .await
        .unwrap_or_else(|_| panic!("waited {BOUND:?} for {what}"))
}

/// The text of a completed task's result.
fn result_text(task: &DetailedTask) -> String {
    match &task.payload {
        TaskPayload::Completed { result } => result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        other => panic!("the task did not complete: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_shows_its_form_in_input_required_and_the_answer_completes_it() {
    let ask_user = std::process::Command::new(env!("CARGO_BIN_EXE_ask-user"));
    let client = client(ask_user, None, true).await;
    let id = call_as_task(
        &client,
        json!({"questions": [{"id": "go", "question": "Ship it?"}]}),
    )
    .await;

    let asking = poll_until(&client, &id, "the form", |task| {
        task.status() == TaskStatus::InputRequired
    })
    .await;
    let TaskPayload::InputRequired { input_requests } = &asking.payload else {
        unreachable!()
    };
    let (key, request) = input_requests.iter().next().expect("an input request");
    let InputRequest::Elicitation(form) = request else {
        panic!("not a form: {request:?}")
    };
    let form = serde_json::to_value(&form.params).unwrap();
    assert_eq!(form["message"], "Ship it?", "{form}");
    let field = form["requestedSchema"]["properties"]
        .as_object()
        .and_then(|fields| fields.keys().next().cloned())
        .expect("a field");

    let answer = ElicitResult::new(ElicitationAction::Accept)
        .with_content(json!({ field: "Yes, after the tests" }));
    let responses = [(key.clone(), serde_json::to_value(answer).unwrap())].into();
    client
        .update_task(UpdateTaskParams::new(&id, responses))
        .await
        .expect("tasks/update");
    let done = poll_until(&client, &id, "the answer", |task| {
        task.status().is_terminal()
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    assert!(
        result_text(&done).contains("Yes, after the tests"),
        "{done:?}"
    );
    // A task that is not this server's is not found.
    assert!(
        client
            .get_task(GetTaskParams::new("no-such-task"))
            .await
            .is_err()
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tasks_question_waits_in_the_inbox_where_its_answer_completes_it_and_a_cancel_withdraws_it()
 {
    let inbox = Inbox::new();
    let client = client(inbox.command(), Some(&inbox.agent_config()), false).await;

    let answered = call_as_task(
        &client,
        json!({"questions": [{"id": "go", "question": "Ship it?"}]}),
    )
    .await;
    let waiting = poll_until(&client, &answered, "where it waits", |task| {
        task.task
            .status_message
            .as_deref()
            .is_some_and(|said| said.contains("inbox"))
    })
    .await;
    assert_eq!(waiting.status(), TaskStatus::Working, "{waiting:?}");
    let question = tokio::task::block_in_place(|| {
        inbox.wait_for("the task's question", false, |q| {
            q["questions"][0]["id"] == "go"
        })
    });
    let answer = json!({"answers": [{"id": "go", "selected": [], "custom": "Ship it Monday"}]});
    let given =
        tokio::task::block_in_place(|| inbox.answer(question["id"].as_str().unwrap(), &answer));
    assert!(given.status.success(), "inbox answer: {given:?}");
    let done = poll_until(&client, &answered, "the answer", |task| {
        task.status().is_terminal()
    })
    .await;
    assert!(result_text(&done).contains("Ship it Monday"), "{done:?}");

    // Cancelled: withdrawn from the inbox, and the task says so.
    let cancelled = call_as_task(
        &client,
        json!({"questions": [{"id": "when", "question": "When?"}]}),
    )
    .await;
    let question = tokio::task::block_in_place(|| {
        inbox.wait_for("the second question", false, |q| {
            q["questions"][0]["id"] == "when"
        })
    });
    client
        .cancel_task(CancelTaskParams::new(&cancelled))
        .await
        .expect("tasks/cancel");
    let ended = poll_until(&client, &cancelled, "the cancel", |task| {
        task.status().is_terminal()
    })
    .await;
    assert_eq!(ended.status(), TaskStatus::Cancelled, "{ended:?}");
    let withdrawn = tokio::task::block_in_place(|| {
        inbox.wait_for("the question withdrawn", true, |q| {
            q["id"] == question["id"] && q["state"] == "withdrawn"
        })
    });
    assert_eq!(withdrawn["state"], "withdrawn", "{withdrawn}");
    client.cancel().await.unwrap();
}
