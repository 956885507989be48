//! A model server of ours on 127.0.0.1 for the real clients (Claude Code's
//! Messages API, Codex's Responses API, Gemini CLI's Gemini API
//! `streamGenerateContent`, each streamed as SSE): asked with
//! its tool among the tools (`ask_user_question` of an MCP server, or a
//! client's own), it calls the tool with `arguments`; given the tool's
//! result, it records it and ends the turn. Anything else it answers "ok".

use crate::http_thread;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use serde_json::{Value, json};

/// The tool's name as the server offers it.
const TOOL: &str = "ask_user_question";

/// What the model says once it has the tool's result.
pub const DONE: &str = "The answers are in.";

/// The task a delegating model's main agent gives its sub-agent (which
/// then calls the tool).
pub const SUB_AGENT_TASK: &str = "Ask the user where to deploy the release.";

pub struct FakeModel {
    pub address: SocketAddr,
    results: mpsc::Receiver<String>,
}

impl FakeModel {
    /// Serves on a free port, on a thread of its own, for the life of the
    /// test process; `arguments` are what the model asks the MCP tool.
    pub fn start(arguments: Value) -> FakeModel {
        FakeModel::calling(TOOL, arguments)
    }

    /// As [`start`](Self::start), for the tool whose name ends with `tool`.
    pub fn calling(tool: &'static str, arguments: Value) -> FakeModel {
        FakeModel::serve(Shared {
            tool,
            arguments,
            delegates: false,
            results: Mutex::new(mpsc::channel().0),
        })
    }

    /// The main agent hands the work to a sub-agent (Claude Code's `Agent`
    /// tool, OpenCode's `task`, in the foreground), and the sub-agent calls
    /// the MCP tool with `arguments`.
    pub fn delegating(arguments: Value) -> FakeModel {
        FakeModel::delegating_to(TOOL, arguments)
    }

    /// As [`delegating`](Self::delegating), the sub-agent calling the tool
    /// whose name ends with `tool`.
    pub fn delegating_to(tool: &'static str, arguments: Value) -> FakeModel {
        FakeModel::serve(Shared {
            tool,
            arguments,
            delegates: true,
            results: Mutex::new(mpsc::channel().0),
        })
    }

    fn serve(mut shared: Shared) -> FakeModel {
        let (tx, results) = mpsc::channel();
        shared.results = Mutex::new(tx);
        let shared = Arc::new(shared);
        let address = http_thread::serve(move |request, _| respond(shared.clone(), request));
        FakeModel { address, results }
    }

    /// The text of the tool's result the client sent back, within `wait`.
    pub fn tool_result(&self, wait: Duration) -> Option<String> {
        self.results.recv_timeout(wait).ok()
    }
}

struct Shared {
    tool: &'static str,
    arguments: Value,
    /// The main agent delegates the call to a sub-agent.
    delegates: bool,
    results: Mutex<mpsc::Sender<String>>,
}

async fn respond(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = request.uri().path().to_owned();
    let body = request.into_body().collect().await?.to_bytes();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let events = match path.as_str() {
        "/v1/messages" => Some(messages(&shared, &body)),
        "/v1/responses" => Some(responses(&shared, &body)),
        path if path.starts_with("/v1beta/models/") && path.ends_with(":streamGenerateContent") => {
            Some(gemini(&shared, &body))
        }
        _ => None,
    };
    Ok(match events {
        Some(events) => Response::builder()
            .header("content-type", "text/event-stream")
            .body(Full::new(Bytes::from(events)))
            .unwrap(),
        // Token counts, model lists, anything else: nothing to say.
        None => Response::builder()
            .status(404)
            .body(Full::new(Bytes::new()))
            .unwrap(),
    })
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// Claude Code and OpenCode: the Messages API. The tool is
/// `mcp__<server>__<tool>` (or a client's own); where the MCP servers are
/// still starting (a TUI sends the first prompt at once), the model waits
/// for them first, with Claude Code's own tool. A delegating main agent
/// starts its sub-agent with Claude Code's `Agent` or OpenCode's `task`.
fn messages(shared: &Shared, body: &Value) -> String {
    const WAIT: &str = "WaitForMcpServers";
    const DELEGATE: [&str; 2] = ["Agent", "task"];
    // Anywhere in the conversation: a client may add messages of its own
    // after it.
    let result = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_1");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let tool = tools.iter().find(|name| name.ends_with(shared.tool));
    // A sub-agent's conversation starts with the task its parent gave it.
    let main_agent = shared.delegates
        && !body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "user")
            .any(|m| m.to_string().contains(SUB_AGENT_TASK));
    let delegated = body["messages"].to_string().contains("toolu_agent");
    let block = match (result, tool) {
        _ if main_agent && delegated => json!({"type": "text", "text": DONE}),
        // Before the MCP server connected (it may be slow on a loaded
        // machine): wait for it, the main agent too, so that the sub-agent
        // it starts has the tool.
        (None, None) if tools.contains(&WAIT) => {
            json!({"type": "tool_use", "id": "toolu_wait", "name": WAIT, "input": {}})
        }
        _ if main_agent && let Some(name) = DELEGATE.iter().find(|d| tools.contains(d)) => {
            json!({"type": "tool_use", "id": "toolu_agent", "name": name, "input": {}})
        }
        (Some(result), _) => {
            let text = match &result["content"] {
                Value::String(text) => text.clone(),
                blocks => blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
            };
            let _ = shared.results.lock().unwrap().send(text);
            json!({"type": "text", "text": DONE})
        }
        (None, Some(tool)) => {
            json!({"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}})
        }
        (None, None) => json!({"type": "text", "text": "ok"}),
    };
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
            "role": "assistant", "model": body["model"], "content": [], "stop_reason": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    );
    let start = match block["type"].as_str() {
        Some("text") => json!({"type": "text", "text": ""}),
        _ => block.clone(),
    };
    out += &event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
    );
    let input = match block["name"].as_str() {
        Some(WAIT) => "{}".to_owned(),
        // In the foreground: the main agent waits for its answer.
        Some("Agent") => json!({"description": "Ask about the deploy",
            "prompt": SUB_AGENT_TASK, "subagent_type": "general-purpose",
            "run_in_background": false})
        .to_string(),
        Some("task") => json!({"description": "Ask about the deploy",
            "prompt": SUB_AGENT_TASK, "subagent_type": "general"})
        .to_string(),
        _ => shared.arguments.to_string(),
    };
    let delta = match block["type"].as_str() {
        Some("text") => json!({"type": "text_delta", "text": block["text"]}),
        _ => json!({"type": "input_json_delta", "partial_json": input}),
    };
    out += &event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
    );
    out += &event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    let stop = match block["type"].as_str() {
        Some("tool_use") => "tool_use",
        _ => "end_turn",
    };
    out += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop},
            "usage": {"output_tokens": 1}}),
    );
    out + &event("message_stop", json!({"type": "message_stop"}))
}

/// Codex: the Responses API. An MCP server's tools come as a namespace;
/// Codex's own are functions of the top level.
fn responses(shared: &Shared, body: &Value) -> String {
    let result = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["type"] == "function_call_output");
    let namespace = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| {
            t["type"] == "namespace"
                && t["tools"]
                    .as_array()
                    .is_some_and(|tools| tools.iter().any(|f| f["name"] == shared.tool))
        })
        .and_then(|t| t["name"].as_str());
    // Or Codex's own tool (`request_user_input`), at the top level.
    let own = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["type"] == "function" && t["name"] == shared.tool);
    let item = match (result, namespace) {
        (None, None) if own => json!({"type": "function_call", "id": "fc_1",
            "call_id": "call_1", "name": shared.tool,
            "arguments": shared.arguments.to_string()}),
        (Some(result), _) => {
            // A text, or (for an error) a list of texts.
            let output = match &result["output"] {
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                output => output.as_str().unwrap_or_default().to_owned(),
            };
            // Codex puts its own lines before the tool's text.
            let text = output
                .split_once("Output:\n")
                .map_or(&*output, |(_, text)| text);
            let _ = shared.results.lock().unwrap().send(text.to_owned());
            text_item(DONE)
        }
        (None, Some(namespace)) => json!({"type": "function_call", "id": "fc_1",
            "call_id": "call_1", "namespace": namespace, "name": shared.tool,
            "arguments": shared.arguments.to_string()}),
        (None, None) => text_item("ok"),
    };
    event(
        "response.created",
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
    ) + &event(
        "response.output_item.done",
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    ) + &event(
        "response.completed",
        json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {
            "input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2}}}),
    )
}

fn text_item(text: &str) -> Value {
    json!({"type": "message", "role": "assistant", "id": "msg_1",
        "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// Gemini CLI: the Gemini API's `streamGenerateContent` (`alt=sse`). An MCP
/// server's tool is `mcp_<server>_<tool>`; its result comes back as a
/// `functionResponse` whose `output` Gemini CLI wraps in
/// `<untrusted_context>`.
fn gemini(shared: &Shared, body: &Value) -> String {
    let result = body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["parts"].as_array())
        .flatten()
        .find_map(|p| p.get("functionResponse"));
    let tool = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["functionDeclarations"].as_array())
        .flatten()
        .filter_map(|f| f["name"].as_str())
        .find(|name| name.ends_with(shared.tool));
    let part = match (result, tool) {
        (Some(result), _) => {
            let response = &result["response"];
            let output = (response["output"].as_str())
                .or(response["error"].as_str())
                .unwrap_or_default();
            let text = output
                .trim()
                .strip_prefix("<untrusted_context>")
                .and_then(|t| t.strip_suffix("</untrusted_context>"))
                .unwrap_or(output)
                .trim();
            let _ = shared.results.lock().unwrap().send(text.to_owned());
            json!({"text": DONE})
        }
        (None, Some(tool)) => {
            json!({"functionCall": {"name": tool, "args": shared.arguments}})
        }
        (None, None) => json!({"text": "ok"}),
    };
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
    });
    format!("data: {chunk}\r\n\r\n")
}
