//! Calls as tasks (the MCP Tasks extension, `io.modelcontextprotocol/tasks`),
//! for a client that declared it.
//!
//! Such a client's `tools/call` of `ask_user_question` is answered at once
//! with a task; the question is asked as the call would be, and the task's
//! status says where it waits: `working`, with a status message naming the
//! answerers' place (the inbox…), or `input_required`, with the form in
//! `inputRequests`, when the client shows forms (its answer comes back in
//! `tasks/update`). The tool's result completes the task: an error of the
//! tool (dismissed, aborted…) is a completed task whose result has
//! `isError`, as the extension says. `tasks/cancel` withdraws the question
//! everywhere it waits, and the task ends `cancelled`.
//!
//! The tasks run in this process ([`TaskManager`], shared by every session
//! of one server): a task's id is found from any session, until the task
//! has ended and one more [`TTL`] has passed. A server whose keys outlive
//! it (`ask-user mcp --http` given its token) also keeps them on disk
//! ([`kept`]): stopped or killed, it leaves their questions waiting, and
//! started again, it finds a task by its id, asks its question again (the
//! inbox finds it, and an answer given meanwhile) or gives its result.
//! Elsewhere a task ends with its process, as a call does.

mod kept;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, CreateTaskResult,
    DetailedTask, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions, current_timestamp};

use kept::{Kept, KeptTask};

use crate::McpServer;

/// How long a task's question may wait, from its call: past it the task
/// fails, and its question is withdrawn. Long enough for a question asked
/// before a weekend.
pub const TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// A task's status as it starts.
const STATUS: &str = "Waiting for the user's answer";

/// How often the client is asked to poll `tasks/get`.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Whether a client with `capabilities` declared the extension.
pub fn declared(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities.is_some_and(ClientCapabilities::supports_tasks)
}

/// The tasks of one server.
#[derive(Clone, Default)]
pub struct Tasks {
    manager: TaskManager,
    /// Where they are kept across restarts, if anywhere.
    kept: Option<Arc<Kept>>,
    /// The ids of tasks asked again after a restart, as the process knows
    /// them, by the ids their clients know.
    again: Arc<Mutex<HashMap<String, String>>>,
}

/// A task by its id.
pub enum Found {
    /// As it stands.
    Task(Box<GetTaskResult>),
    /// Kept from before a restart, not ended: to be asked again with these
    /// arguments ([`Tasks::start`] with its id).
    Lost(JsonObject),
}

impl Tasks {
    /// Keeps the tasks in `dir` ([`kept`]), for a server whose keys outlive
    /// the process.
    pub fn kept_in(self, dir: &Path) -> std::io::Result<Self> {
        Ok(Tasks {
            kept: Some(Arc::new(Kept::in_dir(dir)?)),
            ..self
        })
    }

    /// Whether the tasks outlive the process: a stopping server leaves
    /// their questions waiting.
    pub fn outlive_the_process(&self) -> bool {
        self.kept.is_some()
    }

    /// Starts a call of `arguments` as a task, `status` its first word, and
    /// returns the task at once; `again`, the id of a task kept from before
    /// a restart, asks that one again. `call` gets the task's handle: for
    /// its form, its status and its cancellation. A cancelled task whose
    /// call ends with any result ends `cancelled`.
    pub fn start<F>(
        &self,
        status: &str,
        arguments: &JsonObject,
        again: Option<&str>,
        call: impl FnOnce(TaskContext) -> F,
    ) -> CreateTaskResult
    where
        F: Future<Output = Result<CallToolResult, McpError>> + Send + 'static,
    {
        let options = TaskOptions::new()
            .with_ttl_ms(millis(TTL))
            .with_poll_interval_ms(millis(POLL_INTERVAL))
            .with_status_message(status);
        // Held while the task starts: a task is asked again once.
        let mut asked_again = self.again.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(again) = again
            && let Some(live) = asked_again.get(again)
            && let Ok(task) = self.manager.get_task(live)
        {
            let mut made = CreateTaskResult::new(task.task);
            made.task.task_id = again.to_owned();
            return made;
        }
        let task = self.manager.spawn(options, |task| {
            let id = again.map_or_else(|| task.task_id().to_owned(), str::to_owned);
            let kept = self.kept.clone();
            if let (Some(kept), None) = (&kept, again) {
                let task = KeptTask {
                    arguments: arguments.clone(),
                    created_at: current_timestamp(),
                    result: None,
                };
                kept.start(&id, &task);
            }
            let handle = task.clone();
            let running = call(task);
            Box::pin(async move {
                let result = running.await?;
                let cancelled = handle.is_cancel_requested();
                if let Some(kept) = kept {
                    match kept.get(&id) {
                        Some(_) if cancelled => kept.remove(&id),
                        Some(mut task) => {
                            task.result = Some(result.clone());
                            kept.put(&id, &task);
                        }
                        None => {}
                    }
                }
                match cancelled {
                    true => Err(TaskExit::Cancelled),
                    false => Ok(result),
                }
            })
        });
        let mut made = CreateTaskResult::new(task);
        if let Some(again) = again {
            asked_again.insert(again.to_owned(), made.task.task_id.clone());
            made.task.task_id = again.to_owned();
        }
        made
    }

    /// The task `id` (`tasks/get`): as it stands in this process, as kept
    /// when it ended before a restart, or lost in one.
    pub fn get(&self, id: &str) -> Result<Found, McpError> {
        let live = self.live(id);
        match self.manager.get_task(&live) {
            Ok(mut task) => {
                task.task.task_id = id.to_owned();
                Ok(Found::Task(Box::new(GetTaskResult::new(task))))
            }
            Err(unknown) => match self.kept.as_ref().and_then(|kept| kept.get(id)) {
                Some(KeptTask {
                    result: Some(result),
                    created_at,
                    ..
                }) => {
                    let ended = GetTaskResult::new(ended(id, created_at, &result));
                    Ok(Found::Task(Box::new(ended)))
                }
                Some(KeptTask { arguments, .. }) => Ok(Found::Lost(arguments)),
                None => Err(unknown),
            },
        }
    }

    /// Hands the client's `responses` to the task's open form (`tasks/update`).
    pub fn update(
        &self,
        id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), McpError> {
        self.manager.update_task(&self.live(id), responses)
    }

    /// Asks the task to end (`tasks/cancel`): its question is withdrawn.
    pub fn cancel(&self, id: &str) -> Result<(), McpError> {
        self.manager.cancel_task(&self.live(id))
    }

    /// The id in this process of the task its client knows as `id`.
    fn live(&self, id: &str) -> String {
        let again = self.again.lock().unwrap_or_else(PoisonError::into_inner);
        again.get(id).cloned().unwrap_or_else(|| id.to_owned())
    }
}

/// The task `id`, made at `created_at`, ended with `result` (kept).
fn ended(id: &str, created_at: String, result: &CallToolResult) -> DetailedTask {
    let mut task = Task::new(id, TaskStatus::Completed, created_at, current_timestamp());
    task.ttl_ms = Some(millis(TTL));
    let result = match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(result)) => result,
        _ => JsonObject::new(),
    };
    DetailedTask::new(task, TaskPayload::Completed { result })
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The server's side of tasks: a call started as one, and a task found
/// by its id (asked again when it was lost in a restart).
impl McpServer {
    /// Starts the call `request` as a task, or, `again`, the task of that
    /// id kept from before a restart.
    pub(crate) fn start_task(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        again: Option<&str>,
    ) -> CreateTaskResult {
        let server = self.clone();
        let arguments = request.arguments.clone().unwrap_or_default();
        // A stopping server waits for its tasks, unless they outlive it.
        let call = (!self.tasks.outlive_the_process()).then(|| self.calls.token());
        self.tasks
            .start(STATUS, &arguments, again, |task| async move {
                let response = server.run(request, context, Some(task)).await?;
                drop(call);
                match response {
                    CallToolResponse::Complete(result) => Ok(result),
                    // A task's form goes in the task, never in a round.
                    _ => Err(McpError::internal_error(
                        "a task's call wanted a round of its own",
                        None,
                    )),
                }
            })
    }

    /// The task `id` as it stands; one kept from before a restart, not
    /// ended, is asked again first.
    pub(crate) fn task(
        &self,
        id: &str,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let arguments = match self.tasks.get(id)? {
            Found::Task(task) => return Ok(*task),
            Found::Lost(arguments) => arguments,
        };
        tracing::info!(id, "a task kept from before a restart is asked again");
        let request = CallToolRequestParams::new(self.tool.name.clone()).with_arguments(arguments);
        self.start_task(request, context, Some(id));
        match self.tasks.get(id)? {
            Found::Task(task) => Ok(*task),
            Found::Lost(_) => Err(McpError::internal_error(
                "a task kept from before a restart could not be asked again",
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, DetailedTask, TaskPayload, TaskStatus};

    /// The task once it has ended (polled, as a client does).
    async fn settled(tasks: &Tasks, id: &str) -> DetailedTask {
        let ended = async {
            loop {
                let Ok(Found::Task(task)) = tasks.get(id) else {
                    panic!("task {id} is not found")
                };
                let task = task.task;
                if task.status().is_terminal() {
                    return task;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), ended)
            .await
            .unwrap_or_else(|_| panic!("task {id} did not end within 30 s"))
    }

    #[tokio::test]
    async fn a_tasks_result_completes_it_and_a_cancel_ends_it_cancelled() {
        let tasks = Tasks::default();
        let arguments = JsonObject::new();
        let started = tasks.start("Waiting for the user", &arguments, None, |_| async {
            Ok(CallToolResult::success(vec![ContentBlock::text("yes")]))
        });
        assert_eq!(started.task.ttl_ms, Some(millis(TTL)));
        assert_eq!(
            started.task.status_message.as_deref(),
            Some("Waiting for the user")
        );
        let done = settled(&tasks, &started.task.task_id).await;
        assert!(
            matches!(&done.payload, TaskPayload::Completed { result } if result["content"][0]["text"] == "yes"),
            "{done:?}"
        );

        // The call sees the cancel, withdraws, and ends with its own
        // result (aborted): the task says `cancelled`.
        let started = tasks.start("Waiting", &arguments, None, |task| async move {
            task.cancelled().await;
            Ok(CallToolResult::error(vec![ContentBlock::text("aborted")]))
        });
        let id = started.task.task_id;
        let Ok(Found::Task(working)) = tasks.get(&id) else {
            panic!("not found")
        };
        assert_eq!(working.task.status(), TaskStatus::Working);
        tasks.cancel(&id).unwrap();
        assert_eq!(settled(&tasks, &id).await.status(), TaskStatus::Cancelled);
        assert!(tasks.get("no-such-task").is_err());
    }

    #[tokio::test]
    async fn a_kept_task_is_found_after_a_restart_ended_or_to_be_asked_again() {
        let dir = tempfile::tempdir().unwrap();
        let before = Tasks::default().kept_in(dir.path()).unwrap();
        let arguments: JsonObject = serde_json::from_str(r#"{"questions": [1]}"#).unwrap();
        let ended = before.start("Waiting", &arguments, None, |_| async {
            Ok(CallToolResult::success(vec![ContentBlock::text("yes")]))
        });
        let ended = ended.task.task_id;
        settled(&before, &ended).await;
        let waiting = before.start("Waiting", &arguments, None, |_| std::future::pending());
        let waiting = waiting.task.task_id;
        let cancelled = before.start("Waiting", &arguments, None, |task| async move {
            task.cancelled().await;
            Ok(CallToolResult::error(vec![ContentBlock::text("aborted")]))
        });
        let cancelled = cancelled.task.task_id;
        before.cancel(&cancelled).unwrap();
        settled(&before, &cancelled).await;

        // Another process, the same folder.
        let after = Tasks::default().kept_in(dir.path()).unwrap();
        let Ok(Found::Task(done)) = after.get(&ended) else {
            panic!("the ended task is not found")
        };
        assert_eq!(done.task.task.task_id, ended);
        assert!(
            matches!(&done.task.payload, TaskPayload::Completed { result } if result["content"][0]["text"] == "yes"),
            "{done:?}"
        );
        let Ok(Found::Lost(lost)) = after.get(&waiting) else {
            panic!("the waiting task is not found to be asked again")
        };
        assert_eq!(lost, arguments);
        assert!(
            after.get(&cancelled).is_err(),
            "a cancelled task is forgotten"
        );

        // Asked again, it answers to its id, and once.
        let again = after.start("Waiting", &lost, Some(&waiting), |_| async {
            Ok(CallToolResult::success(vec![ContentBlock::text("later")]))
        });
        assert_eq!(again.task.task_id, waiting);
        let done = settled(&after, &waiting).await;
        assert_eq!(done.task.task_id, waiting);
        assert!(
            matches!(&done.payload, TaskPayload::Completed { result } if result["content"][0]["text"] == "later"),
            "{done:?}"
        );
    }
}
