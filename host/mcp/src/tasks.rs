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
//! The tasks live in this process ([`TaskManager`], shared by every session
//! of one server): a task's id is found from any session, until the task
//! has ended and one more [`TTL`] has passed, and lost when the process
//! ends. Its question then waits in the inbox, where the same call asked
//! again finds it (`keyed_by`).

use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ClientCapabilities, CreateTaskResult, GetTaskResult};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};

/// How long a task's question may wait, from its call: past it the task
/// fails, and its question is withdrawn. Long enough for a question asked
/// before a weekend.
pub const TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// How often the client is asked to poll `tasks/get`.
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Whether a client with `capabilities` takes a call's answer as a task.
pub fn declared(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities.is_some_and(ClientCapabilities::supports_tasks)
}

/// The tasks of one server.
#[derive(Clone, Default)]
pub struct Tasks(TaskManager);

impl Tasks {
    /// Starts `call` as a task, `status` its first word, and returns the
    /// task at once. `call` gets the task's handle: for its form, its
    /// status and its cancellation. A cancelled task whose call ends with
    /// any result ends `cancelled`.
    pub fn start<F>(&self, status: &str, call: impl FnOnce(TaskContext) -> F) -> CreateTaskResult
    where
        F: Future<Output = Result<CallToolResult, McpError>> + Send + 'static,
    {
        let options = TaskOptions::new()
            .with_ttl_ms(millis(TTL))
            .with_poll_interval_ms(millis(POLL_INTERVAL))
            .with_status_message(status);
        let task = self.0.spawn(options, |task| {
            let cancelled = task.clone();
            let running = call(task);
            Box::pin(async move {
                let result = running.await?;
                match cancelled.is_cancel_requested() {
                    true => Err(TaskExit::Cancelled),
                    false => Ok(result),
                }
            })
        });
        CreateTaskResult::new(task)
    }

    /// The task `id` as it stands (`tasks/get`).
    pub fn get(&self, id: &str) -> Result<GetTaskResult, McpError> {
        self.0.get_task(id).map(GetTaskResult::new)
    }

    /// Hands the client's `responses` to the task's open form (`tasks/update`).
    pub fn update(
        &self,
        id: &str,
        responses: impl IntoIterator<Item = (String, serde_json::Value)>,
    ) -> Result<(), McpError> {
        self.0.update_task(id, responses)
    }

    /// Asks the task to end (`tasks/cancel`): its question is withdrawn.
    pub fn cancel(&self, id: &str) -> Result<(), McpError> {
        self.0.cancel_task(id)
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ContentBlock, DetailedTask, TaskPayload, TaskStatus};

    /// The task once it has ended (polled, as a client does).
    async fn settled(tasks: &Tasks, id: &str) -> DetailedTask {
        let ended = async {
            loop {
                let task = tasks.get(id).unwrap().task;
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
        let started = tasks.start("Waiting for the user", |_| async {
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
        let started = tasks.start("Waiting", |task| async move {
            task.cancelled().await;
            Ok(CallToolResult::error(vec![ContentBlock::text("aborted")]))
        });
        let id = started.task.task_id;
        assert_eq!(tasks.get(&id).unwrap().task.status(), TaskStatus::Working);
        tasks.cancel(&id).unwrap();
        assert_eq!(settled(&tasks, &id).await.status(), TaskStatus::Cancelled);
        assert!(tasks.get("no-such-task").is_err());
    }
}
