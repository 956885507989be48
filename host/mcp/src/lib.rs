//! `ask-user mcp`: `ask_user_question` for every MCP client, answered in the
//! client's own UI through elicitation, or, in a client that renders MCP
//! Apps and shows no forms, through the same form as an app
//! (SPEC §6).
//!
//! Each `tools/call` runs the component exactly as `ask-user ask` does, as a
//! root agent of its own (or, when the host tells a sub-agent's call by
//! [`SubAgents`], as a sub-agent of its session's root, under the host's
//! policy), with the call's cancellation as the turn's signal
//! (`notifications/cancelled` aborts it, withdrawing an open form). For a
//! client that declared form elicitation, an answerer of the call's own (the
//! client's form) goes where [`Forms`] says: before the host's answerers
//! (those on the runtime's seam), after them, or nowhere. Stopping the
//! server ends every open call `ASK_ABORTED` and sends its result.
//!
//! A client that declared the Tasks extension gets each call as a task at
//! once, the form (if it shows forms) in the task (module `tasks`); not Claude
//! Code, whose model would be told that a task's result is no answer of
//! the user's (module `client`).
//!
//! Protocol 2026-07-28 has no server-to-client requests: a call that needs
//! the human's answer returns `input_required` with the same form and a
//! `requestState` sealed (HMAC, a key of this process, or of the bearer
//! token that `ask-user mcp --http` was given) to the exact
//! arguments, valid for [`REQUEST_STATE_TTL`]; the retry carries the
//! client's answer, the component runs again (it is deterministic) and the
//! answerer claims with it.

mod apps;
mod client;
mod elicitation;
mod http;
mod keys;
mod log;
pub mod stdio;
mod sub_agents;
mod tasks;

use std::sync::Arc;
use std::time::Duration;

use ask_user_seam::ErrorCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    ElicitRequest, ElicitResult, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ListResourcesResult, ListToolsResult,
    MetaObject, PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, RequestStateCodec, SealOptions, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::TaskContext;
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use apps::{AppAnswerer, AppForms};
use client::Client;
use elicitation::{Channel, ElicitationAnswerer};
pub use http::McpHttp;
use keys::{CallIds, Keys};
pub use sub_agents::{SubAgent, SubAgents};
use tasks::Tasks;

use ask_user_answerers::Page;
use ask_user_runtime::{ToolResult, ToolRuntime};

/// How long a `requestState` stays valid: the time a human has to fill in
/// the form of a 2026-07-28 client.
pub const REQUEST_STATE_TTL: Duration = Duration::from_secs(30 * 60);

/// How long a stopping server waits for its calls' results.
const STOP_BOUND: Duration = Duration::from_secs(2);

/// The key under which the form travels in `inputRequests`.
const FORM_KEY: &str = "ask";

/// Where the client's own form stands in each call's chain of answerers
/// (`[mcp] forms` in the config file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Forms {
    /// The form first, the host's answerers when the client has none or it
    /// passes.
    #[default]
    First,
    /// The host's answerers first, the form only when they all pass.
    Last,
    /// Never the client's form: the host's answerers only (what a headless
    /// client, which cannot show a form, needs).
    Never,
}

/// The `[mcp]` table of the config file: how `ask-user mcp` serves.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    /// Where the client's form goes (`"first"`, `"last"`, `"never"`).
    #[serde(default)]
    pub forms: Forms,
}

/// The MCP server over a loaded component.
#[derive(Clone)]
pub struct McpServer {
    runtime: Arc<ToolRuntime>,
    /// Pages where the human can answer (the web answerer's), in chain
    /// order: a client that can open a URL is sent to the first.
    pages: Arc<[Page]>,
    forms: Forms,
    /// Cancelled when the server stops: every call under way ends
    /// `ASK_ABORTED` (shared by every session).
    stopping: CancellationToken,
    /// The calls under way, so that stopping waits for their results.
    calls: TaskTracker,
    /// The level the client set for log messages: one client's, so each
    /// HTTP session gets its own ([`for_session`](Self::for_session)).
    log: log::CallLog,
    tool: Tool,
    state: Arc<RequestStateCodec>,
    /// Messages of the client dropped for their size (stdio only).
    dropped: stdio::Dropped,
    /// Each call's agent id.
    call_ids: CallIds,
    /// Which calls the client's sub-agents made, when the host can tell.
    sub_agents: Option<Arc<dyn SubAgents>>,
    /// The roots of the client sessions whose sub-agents called.
    sessions: sub_agents::Sessions,
    /// Where a call's question waits when the client shows no form of it
    /// (the host's answerers: the inbox…), said in the call's progress.
    waiting: Option<Arc<str>>,
    /// Set to the client's name at its first call, for the host's
    /// answerers to name it ([`names_its_client`](Self::names_its_client)).
    client_name: Option<Arc<std::sync::OnceLock<String>>>,
    /// The forms waiting for a client's app (the MCP Apps extension).
    app_forms: AppForms,
    /// The calls made tasks (the MCP Tasks extension).
    tasks: Tasks,
    /// Where tasks are kept across restarts, once the server is keyed.
    tasks_dir: Option<std::path::PathBuf>,
}

impl McpServer {
    /// Serves `runtime`'s component; a call asks through its seam, the
    /// client's own form first. The `requestState` key is random, per
    /// process.
    pub fn new(runtime: Arc<ToolRuntime>, pages: &[Page]) -> std::io::Result<Self> {
        let keys = Keys::random()?;
        let definition = runtime.definition();
        let object = |schema: &Value| match schema {
            Value::Object(object) => Arc::new(object.clone()),
            _ => Arc::new(JsonObject::new()),
        };
        let tool = Tool::new(
            definition.name.clone(),
            definition.description.clone(),
            object(&definition.input_schema),
        )
        .with_raw_output_schema(object(&definition.output_schema))
        // It only reads from the human and changes nothing: clients that
        // honour the hints need not ask for approval before each call.
        .annotate(
            ToolAnnotations::with_title("Ask the user")
                .read_only(true)
                .destructive(false)
                .open_world(false),
        );
        Ok(McpServer {
            runtime,
            pages: pages.into(),
            forms: Forms::default(),
            log: log::CallLog::default(),
            tool,
            state: keys.request_state()?,
            dropped: stdio::Dropped::never(),
            call_ids: keys.call_ids,
            stopping: CancellationToken::new(),
            calls: TaskTracker::new(),
            sub_agents: None,
            sessions: sub_agents::Sessions::default(),
            waiting: None,
            client_name: None,
            app_forms: AppForms::default(),
            tasks: Tasks::default(),
            tasks_dir: None,
        })
    }

    /// Sets `name`, at the client's first call, to how people know the
    /// client (`clientInfo`: "Gemini CLI" for `gemini-cli-mcp-client`, else
    /// its title or name), for the host's answerers to name it (the inbox,
    /// in place of this program and its pid). For a server of one client
    /// (stdio): the first client's name stays.
    pub fn names_its_client(self, name: Arc<std::sync::OnceLock<String>>) -> Self {
        McpServer {
            client_name: Some(name),
            ..self
        }
    }

    /// Says `where_` a call's question waits (the host's answerers' notice:
    /// "questions go to the inbox of …") in a progress notification, to a
    /// client that asked for progress and shows no form of it: a client
    /// that shows progress (Gemini CLI) says where to answer while it waits.
    pub fn waiting_says(self, where_: &str) -> Self {
        McpServer {
            waiting: Some(where_.into()),
            ..self
        }
    }

    /// Tells the calls a client's sub-agents made by `sub_agents`: each runs
    /// as a sub-agent of its session's root, under the host's `[policy]
    /// delegated` (refused, or relayed and labelled). Without it every call
    /// is a root's own.
    pub fn sub_agents(self, sub_agents: Arc<dyn SubAgents>) -> Self {
        McpServer {
            sub_agents: Some(sub_agents),
            ..self
        }
    }

    /// This server for one more client: shares everything but what the
    /// client sets (its log level).
    pub(crate) fn for_session(&self) -> Self {
        McpServer {
            log: log::CallLog::default(),
            ..self.clone()
        }
    }

    /// Ends every call under way `ASK_ABORTED` (its question withdrawn) and
    /// waits, at most `bound`, for their results to be made; new calls end
    /// so at once.
    pub async fn abort_calls(&self, bound: Duration) {
        self.stopping.cancel();
        self.calls.close();
        let _ = tokio::time::timeout(bound, self.calls.wait()).await;
    }

    /// Derives this server's keys from `secret` instead of random ones of
    /// the process: each call's agent id (from the key and its arguments)
    /// and the `requestState` seal. A server restarted with the same secret
    /// gives a call asked again the id it had, so an inbox question it left
    /// waiting is found again, and takes the retry of a 2026-07-28 client
    /// whose form was sealed before the restart.
    ///
    /// With [`keeps_tasks_in`](Self::keeps_tasks_in), tasks are kept in a
    /// folder of the secret's there, so that the restarted server finds a
    /// task by its id, and asks its question again (found again in the
    /// inbox) or gives its result.
    pub fn keyed_by(self, secret: &[u8]) -> std::io::Result<Self> {
        let keys = Keys::from(secret);
        let tasks = match &self.tasks_dir {
            Some(dir) => self.tasks.clone().kept_in(&dir.join(keys.tasks_folder()))?,
            None => self.tasks.clone(),
        };
        Ok(McpServer {
            state: keys.request_state()?,
            call_ids: keys.call_ids,
            tasks,
            ..self
        })
    }

    /// Keeps tasks in `dir` once the server is [keyed](Self::keyed_by).
    pub fn keeps_tasks_in(self, dir: std::path::PathBuf) -> Self {
        McpServer {
            tasks_dir: Some(dir),
            ..self
        }
    }

    /// Puts the client's own form where `forms` says in each call's chain.
    pub fn forms(self, forms: Forms) -> Self {
        McpServer { forms, ..self }
    }

    /// Serves one client on standard input and output until it leaves or
    /// `stop` resolves. On `stop`, every open call ends `ASK_ABORTED` (its
    /// question withdrawn) and its result is sent before this returns. A
    /// message over [`stdio::MAX_MESSAGE_BYTES`] is dropped, and a form open
    /// then ends with `INVALID_ANSWER` instead of waiting for it.
    pub async fn serve_stdio(self, stop: impl Future<Output = ()>) -> std::io::Result<()> {
        let (input, dropped) = stdio::BoundedLines::new(tokio::io::stdin());
        let server = McpServer { dropped, ..self };
        let calls = server.clone();
        let mut stop = std::pin::pin!(stop);
        let service = tokio::select! {
            service = server.serve((input, tokio::io::stdout())) => service
                .map_err(|e| std::io::Error::other(format!("the MCP handshake failed: {e}")))?,
            () = &mut stop => return Ok(()),
        };
        let cancel = service.cancellation_token();
        let mut waiting = std::pin::pin!(service.waiting());
        let quit = tokio::select! {
            quit = &mut waiting => quit,
            () = stop => {
                calls.abort_calls(STOP_BOUND).await;
                // The service sends what its calls answered, then closes.
                cancel.cancel();
                waiting.await
            }
        };
        quit.map(drop)
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// Runs a call of the tool; `task` when the call is a task's, whose
    /// form and cancellation go through it.
    async fn run(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        task: Option<TaskContext>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        // The call's id: keyed by this server's secret, so that no call of
        // another process (or machine) is ever taken for it, and by the
        // arguments' content, so that the same call asked again of this
        // server restarted finds its inbox question.
        let id = self
            .call_ids
            .of(&arguments)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let arguments = arguments.to_string();
        let client = Client::of(&context);
        let rounds = client.rounds;
        let answered = match &request.request_state {
            Some(sealed) => Some(self.answered(sealed, &arguments, &request)?),
            None => None,
        };
        let retry = answered.is_some();
        let capability = context.client_capabilities().and_then(|c| c.elicitation);
        let elicits = capability
            .as_ref()
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        // A page beats a form where the client can send the human to one
        // (a form holds a plan under review poorly). Not over 2026-07-28:
        // its first round ends the call, and the page's question with it.
        let page = self.pages.first().filter(|_| {
            !rounds && client.follows_pages && capability.as_ref().is_some_and(|e| e.url.is_some())
        });
        let channel = match (page, elicits, rounds) {
            _ if self.forms == Forms::Never => None,
            _ if task.is_some() => task.clone().filter(|_| elicits).map(Channel::Task),
            (Some(page), _, _) => Some(Channel::Page {
                peer: context.peer.clone(),
                page: page.clone(),
            }),
            (None, false, _) => None,
            (None, true, false) => Some(Channel::Live(context.peer.clone())),
            (None, true, true) => Some(Channel::rounds(answered)),
        };
        let answerer = channel
            .map(|channel| ElicitationAnswerer::new(channel, client.renders, self.dropped.clone()));
        let answerer = answerer.map(Arc::new);
        // A client that renders apps and shows no form gets ours as an app.
        let app = (!elicits
            && self.forms != Forms::Never
            && apps::declared(context.client_capabilities().as_ref()))
        .then(|| {
            let key = self.call_ids.derived(&Value::Object(
                request.arguments.clone().unwrap_or_default(),
            ));
            Arc::new(AppAnswerer::new(self.app_forms.clone(), key))
        });

        // An agent of its own, so that its answerer reaches this call only:
        // a root (its id, above), or a sub-agent of its session's root.
        // Both go when the call ends, or when its future is dropped
        // half-way.
        let seam = self.runtime.seam();
        let sub_agent = self.sub_agents.as_ref().and_then(|s| s.of(&context.meta));
        let mut call = match &sub_agent {
            Some(sub) => {
                let root = self.sessions.root_of(seam.agents(), sub);
                seam.scoped_sub_agent_call(&root, sub.name.clone())
            }
            None => seam.scoped_call(id.id()),
        };
        if let Some(answerer) = &answerer {
            call.answer_with(answerer.clone(), self.forms == Forms::First);
        }
        if let Some(app) = &app {
            call.answer_with(app.clone(), self.forms == Forms::First);
        }
        // The retry of a form's first round asks what that round asked
        // (and counted) again, now with the answer.
        if retry {
            call.retried();
        }
        let questions = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("questions"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        // Named once, at its first call.
        if let Some(name) = self
            .client_name
            .as_ref()
            .filter(|name| name.get().is_none())
            && let Some(info) = context.client_info()
            && let Some(label) = client::label(&info.name, info.title.as_deref())
        {
            let _ = name.set(label);
        }
        self.log.asking(&context.peer, questions).await;
        if let (Some(task), None, None, Some(waiting)) = (&task, &answerer, &app, &self.waiting) {
            task.set_status_message(format!("Waiting for the user: {waiting}"));
        } else if let (None, None, Some(waiting), Some(token)) = (
            &answerer,
            &app,
            &self.waiting,
            context.meta.get_progress_token(),
        ) {
            let said = ProgressNotificationParam::new(token, 0.0)
                .with_message(format!("Asking you: {waiting}"));
            if let Err(error) = context.peer.notify_progress(said).await {
                tracing::debug!(%error, "the client was not told where the question waits");
            }
        }
        // The call's signal: the client's cancellation, or the server's
        // stop, unless its task outlives it. Either way its agent stopped
        // waiting: a question in the inbox stays there, for the same call
        // asked again.
        let turn = match task.is_some() && self.tasks.outlive_the_process() {
            true => CancellationToken::new(),
            false => self.stopping.child_token(),
        };
        let cancelled = async {
            match &task {
                Some(task) => task.cancelled().await,
                None => context.ct.cancelled().await,
            }
        };
        let result = {
            let mut running = std::pin::pin!(self.runtime.call(call.agent(), &turn, &arguments));
            tokio::select! {
                result = &mut running => result,
                () = cancelled => {
                    match task {
                        // A cancelled task withdraws its question
                        // everywhere: its agent ends (`CALLER_NOT_LIVE`,
                        // the task `cancelled`).
                        Some(_) => {
                            seam.agents().end(call.agent());
                        }
                        None => turn.cancel(),
                    }
                    running.await
                }
            }
        };
        drop((call, id));
        self.log.ended(&context.peer, &result).await;

        if let Some(form) = answerer.as_ref().and_then(|a| a.wanted()) {
            let sealed = self
                .state
                .seal_json_with(
                    &json!({"form": FORM_KEY}),
                    &SealOptions::new()
                        .associated_data(arguments.as_bytes())
                        .ttl(REQUEST_STATE_TTL),
                )
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            let mut requests = InputRequests::new();
            requests.insert(
                FORM_KEY.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(form)),
            );
            return Ok(InputRequiredResult::new(Some(requests), Some(sealed)).into());
        }
        Ok(CallToolResponse::from(to_mcp(
            result,
            elicits || app.is_some(),
        )))
    }

    /// The client's answer to the form, from a retry whose `requestState`
    /// this process sealed for exactly these arguments.
    fn answered(
        &self,
        sealed: &str,
        arguments: &str,
        request: &CallToolRequestParams,
    ) -> Result<ElicitResult, McpError> {
        self.state
            .open_with(sealed, arguments.as_bytes())
            .map_err(|_| {
                // One answer for every kind of failure, as the codec asks.
                McpError::invalid_params(
                    format!(
                        "the requestState was refused: it belongs to other arguments, to \
                         another ask-user process, or is older than {} minutes. Call the tool \
                         again without it",
                        REQUEST_STATE_TTL.as_secs() / 60
                    ),
                    None,
                )
            })?;
        let response = request
            .input_responses
            .as_ref()
            .and_then(|responses| responses.get(FORM_KEY))
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "the retry carries no inputResponses[{FORM_KEY:?}]: the answer to the form"
                    ),
                    None,
                )
            })?;
        serde_json::from_value(response.clone()).map_err(|e| {
            McpError::invalid_params(
                format!("inputResponses[{FORM_KEY:?}] is not an elicitation result: {e}"),
                None,
            )
        })
    }
}

/// The tool result as MCP carries it: the code visible to the model in the
/// text (`Error [CODE]: …`) and to the client in `_meta`. `shows` says
/// whether the client shows a form of its own (elicitation or the app).
fn to_mcp(result: ToolResult, shows: bool) -> CallToolResult {
    let text = result.text().to_owned();
    let Some(error) = &result.error else {
        let mut done = CallToolResult::success(vec![ContentBlock::text(text)]);
        done.structured_content = result.structured_content;
        return done;
    };
    let message = text.strip_prefix("Error: ").unwrap_or(&text);
    let mut text = match &error.code {
        Some(code) => format!("Error [{code}]: {message}"),
        None => format!("Error: {message}"),
    };
    if error.code == Some(ErrorCode::NoProvider) {
        // Words for the model, which cannot change the setup: what the
        // user saw (nothing), and why.
        text.push_str(if shows {
            " (The user was not shown the question: this client did not display it, and no \
             other way to reach the user answered.)"
        } else {
            " (The user was not shown the question: this client cannot display a tool's \
             questions, and no other way to reach the user answered.)"
        });
    }
    let mut failed = CallToolResult::error(vec![ContentBlock::text(text)]);
    let mut meta = JsonObject::new();
    if let Some(code) = &error.code {
        meta.insert("code".into(), json!(code.as_str()));
    }
    meta.insert("name".into(), json!(error.name));
    failed.meta = Some(MetaObject(meta));
    failed
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // logging, with the protocols that have it
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_logging()
            .enable_tasks()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.protocol_version = client::PROTOCOL;
        info.server_info = Implementation::new("ask-user", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "ask_user_question pauses and asks the user a question, shown as a form in this \
             client when it supports elicitation or MCP Apps."
                .to_owned(),
        );
        info
    }

    #[allow(deprecated)] // logging, with the protocols that have it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log.set(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = match apps::declared(context.client_capabilities().as_ref()) {
            true => [apps::shown_with_the_form(&self.tool)]
                .into_iter()
                .chain(apps::tools())
                .collect(),
            false => vec![self.tool.clone()],
        };
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        match name == self.tool.name {
            true => Some(self.tool.clone()),
            false if apps::is_app_tool(name) => apps::tools().into_iter().find(|t| t.name == name),
            false => None,
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if apps::is_app_tool(&request.name)
            && apps::declared(context.client_capabilities().as_ref())
        {
            let arguments = request.arguments.unwrap_or_default();
            let key_of = |arguments: &Value| self.call_ids.derived(arguments);
            let called = apps::call(&self.app_forms, &request.name, arguments, key_of);
            return Ok(self.calls.track_future(called).await?.into());
        }
        if request.name != self.tool.name {
            return Err(McpError::invalid_params(
                format!(
                    "there is no tool {:?}; this server offers {:?}",
                    request.name, self.tool.name
                ),
                None,
            ));
        }
        if !Client::of(&context).takes_tasks {
            return self
                .calls
                .track_future(self.run(request, context, None))
                .await;
        }
        Ok(self.start_task(request, context, None).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.task(&request.task_id, context)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task(&request.task_id, context)?;
        self.tasks.update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task(&request.task_id, context)?;
        self.tasks.cancel(&request.task_id)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let apps = apps::declared(context.client_capabilities().as_ref());
        let resources = apps.then(apps::resource).into_iter().collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        apps::read(&request).map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_shows_its_code_to_the_model_and_the_client() {
        let result = ToolResult::coded(ErrorCode::AskCancelled, "the user dismissed it");
        let mcp = serde_json::to_value(to_mcp(result, true)).unwrap();
        assert_eq!(mcp["isError"], true);
        assert_eq!(
            mcp["content"][0]["text"],
            "Error [ASK_CANCELLED]: the user dismissed it"
        );
        assert_eq!(
            mcp["_meta"],
            json!({"code": "ASK_CANCELLED", "name": "UserQuestionError"})
        );
    }

    #[test]
    fn no_provider_tells_the_model_the_user_saw_nothing_and_why() {
        for elicits in [false, true] {
            let result = ToolResult::coded(ErrorCode::NoProvider, "no answerer took the question.");
            let mcp = serde_json::to_value(to_mcp(result, elicits)).unwrap();
            let text = mcp["content"][0]["text"].as_str().unwrap();
            assert!(
                text.starts_with("Error [NO_PROVIDER]: no answerer"),
                "{text}"
            );
            assert!(
                text.contains("The user was not shown the question"),
                "{text}"
            );
            let why = match elicits {
                true => "did not display it",
                false => "cannot display",
            };
            assert!(text.contains(why), "{text}");
            // Nothing the model could act on but the user's setup.
            assert!(
                !text.contains("config") && !text.contains("kind ="),
                "{text}"
            );
        }
    }
}
