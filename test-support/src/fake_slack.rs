//! A Slack of ours on 127.0.0.1 (no machine here reaches Slack), written
//! from Slack's API reference: the Web API methods the inbox calls
//! (`apps.connections.open` with the app's token, `chat.postMessage`,
//! `chat.update`, `chat.postEphemeral` and `views.open` with the bot's),
//! each answering `{ok, …}` or `{ok: false, error}`, 429 with
//! `Retry-After` when told to throttle, and Block Kit's limits checked
//! (`invalid_blocks`); and Socket Mode: the URL `apps.connections.open`
//! gives is a WebSocket of ours that says `hello`, then sends each
//! interaction as an envelope (`{envelope_id, type: "interactive",
//! payload}`) and records its acknowledgement. A test plays the people in
//! the workspace: it presses buttons, ticks checkboxes and sends the
//! own-words modal, as Slack's payloads (`block_actions`,
//! `view_submission`).

use crate::http_thread;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as Frame;

/// The longest a test waits for the inbox to do something.
const BOUND: Duration = Duration::from_secs(60);

pub const APP_TOKEN: &str = "xapp-1-A0FAKE-1-fake";
pub const BOT_TOKEN: &str = "xoxb-1-fake-bot";
pub const CHANNEL: &str = "C0ASKUSER";

/// A person of the workspace.
#[derive(Debug, Clone, Copy)]
pub struct Person {
    pub id: &'static str,
    pub username: &'static str,
}

/// Allowed to answer, in the tests' configs.
pub const ANA: Person = Person {
    id: "U0ANA",
    username: "ana",
};

/// Not allowed.
pub const MALLORY: Person = Person {
    id: "U0MALLORY",
    username: "mallory",
};

/// A message the bot posted, as it is now.
#[derive(Debug, Clone)]
pub struct Posted {
    pub ts: String,
    pub text: String,
    pub blocks: Vec<Value>,
    pub updates: usize,
}

impl Posted {
    /// Every mrkdwn text of its blocks, joined.
    pub fn shown(&self) -> String {
        self.blocks
            .iter()
            .flat_map(|b| {
                let mut texts = vec![b["text"]["text"].as_str().unwrap_or_default().to_owned()];
                texts.extend(
                    b["elements"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e["text"].as_str().map(str::to_owned)),
                );
                texts
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Its interactive elements (buttons and checkboxes).
    pub fn elements(&self) -> Vec<Value> {
        self.blocks
            .iter()
            .filter(|b| b["type"] == "actions")
            .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
            .collect()
    }

    /// The button whose text contains `text`.
    pub fn button(&self, text: &str) -> Value {
        self.elements()
            .into_iter()
            .find(|e| {
                e["type"] == "button"
                    && e["text"]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .contains(text)
            })
            .unwrap_or_else(|| panic!("no button {text:?} in {self:#?}"))
    }
}

#[derive(Default)]
struct Inner {
    posted: Vec<Posted>,
    next_ts: u64,
    /// What each person was told, ephemerally: (user, text).
    told: Vec<(String, String)>,
    /// Modals opened: the view, by trigger id.
    views: Vec<(String, Value)>,
    /// Trigger ids given with payloads (each opens one modal).
    triggers: Vec<String>,
    /// Envelopes waiting for the socket, and those sent.
    queued: Vec<Value>,
    /// Acknowledged envelope ids.
    acks: Vec<String>,
    connections: usize,
    next_envelope: u64,
    /// Web API methods to answer 429 (how many more, Retry-After).
    throttled: HashMap<String, (usize, u64)>,
    /// Calls: (method, when, status).
    calls: Vec<(String, Instant, u16)>,
    /// A `chat.postMessage` whose text has one of these is refused.
    refused: Vec<String>,
    down: bool,
}

#[derive(Clone)]
pub struct FakeSlack {
    /// What `api_url` is set to (`http://127.0.0.1:PORT/api`).
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    /// Wakes the socket to send what was queued.
    queued: Arc<tokio::sync::Notify>,
}

impl FakeSlack {
    pub fn start() -> FakeSlack {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let queued = Arc::new(tokio::sync::Notify::new());
        let socket = serve_socket(inner.clone(), queued.clone());
        let api = {
            let inner = inner.clone();
            http_thread::serve(move |request, _| respond(inner.clone(), socket, request))
        };
        FakeSlack {
            url: format!("http://{api}/api"),
            inner,
            queued,
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }

    pub fn set_down(&self, down: bool) {
        self.inner().down = down;
    }

    /// The next `times` calls of `method` are answered 429.
    pub fn throttle(&self, method: &str, times: usize, retry_after: u64) {
        self.inner()
            .throttled
            .insert(method.to_owned(), (times, retry_after));
    }

    /// Every `chat.postMessage` whose text has `text` is refused
    /// (`invalid_blocks`), as Slack refuses blocks it cannot show.
    pub fn refuse(&self, text: &str) {
        self.inner().refused.push(text.to_owned());
    }

    /// The calls so far, of every method: which, when, and the status
    /// answered.
    pub fn all_calls(&self) -> Vec<(String, Instant, u16)> {
        self.inner().calls.clone()
    }

    /// How many messages were posted (a refused one was not).
    pub fn posts(&self) -> usize {
        self.inner().posted.len()
    }

    /// The calls of `method`: when, and the status answered.
    pub fn calls(&self, method: &str) -> Vec<(Instant, u16)> {
        self.inner()
            .calls
            .iter()
            .filter(|(m, _, _)| m == method)
            .map(|(_, at, status)| (*at, *status))
            .collect()
    }

    /// How many Socket Mode connections were opened.
    pub fn connections(&self) -> usize {
        self.inner().connections
    }

    fn wait<T>(&self, what: &str, found: impl Fn(&Inner) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(found) = found(&self.inner()) {
                return found;
            }
            assert!(
                start.elapsed() < BOUND,
                "waited {BOUND:?} for {what}: {:#?}",
                self.inner().posted
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The message whose text shows `text` and for which `holds`.
    pub fn message(&self, text: &str, holds: impl Fn(&Posted) -> bool) -> Posted {
        self.wait(&format!("a message with {text:?}"), |inner| {
            inner
                .posted
                .iter()
                .find(|m| m.shown().contains(text) && holds(m))
                .cloned()
        })
    }

    /// What `person` was told, once told something containing `text`.
    pub fn told(&self, person: Person, text: &str) -> String {
        self.wait(&format!("{} told {text:?}", person.username), |inner| {
            inner
                .told
                .iter()
                .find(|(user, said)| user == person.id && said.contains(text))
                .map(|(_, said)| said.clone())
        })
    }

    /// Whether every envelope sent was acknowledged (waits for it).
    pub fn all_acked(&self) {
        self.wait("every envelope acknowledged", |inner| {
            let sent: Vec<&str> = inner
                .queued
                .iter()
                .filter_map(|e| e["envelope_id"].as_str())
                .collect();
            sent.iter()
                .all(|id| inner.acks.iter().any(|ack| ack == id))
                .then_some(())
        });
    }

    fn send(&self, payload: Value) {
        let mut inner = self.inner();
        inner.next_envelope += 1;
        let envelope = json!({
            "envelope_id": format!("env-{}", inner.next_envelope),
            "type": "interactive",
            "accepts_response_payload": false,
            "retry_attempt": 0,
            "payload": payload,
        });
        inner.queued.push(envelope);
        drop(inner);
        self.queued.notify_waiters();
    }

    fn trigger(&self) -> String {
        let mut inner = self.inner();
        let trigger = format!("trigger-{}", inner.triggers.len() + 1);
        inner.triggers.push(trigger.clone());
        trigger
    }

    fn block_actions(&self, person: Person, message: &Posted, action: Value) -> Value {
        json!({
            "type": "block_actions",
            "user": {"id": person.id, "username": person.username, "name": person.username, "team_id": "T0"},
            "team": {"id": "T0"},
            "container": {"type": "message", "message_ts": message.ts, "channel_id": CHANNEL, "is_ephemeral": false},
            "channel": {"id": CHANNEL, "name": "agents"},
            "message": {"ts": message.ts, "text": message.text, "blocks": message.blocks},
            "trigger_id": self.trigger(),
            "actions": [action],
        })
    }

    /// `person` presses `button` (an element of `message`).
    pub fn press(&self, person: Person, message: &Posted, button: &Value) {
        let action = json!({
            "type": "button",
            "action_id": button["action_id"],
            "block_id": "b",
            "value": button["value"],
            "text": button["text"],
            "action_ts": "1",
        });
        let payload = self.block_actions(person, message, action);
        self.send(payload);
    }

    /// `person` ticks checkboxes `element` (of `message`) so that the
    /// options with `labels` are ticked in it.
    pub fn tick(&self, person: Person, message: &Posted, element: &Value, labels: &[&str]) {
        let selected: Vec<Value> = element["options"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| labels.iter().any(|l| o["text"]["text"] == *l))
            .cloned()
            .collect();
        let action = json!({
            "type": "checkboxes",
            "action_id": element["action_id"],
            "block_id": "b",
            "selected_options": selected,
            "action_ts": "1",
        });
        let payload = self.block_actions(person, message, action);
        self.send(payload);
    }

    /// The modal the bot opened last, once it opened one.
    pub fn modal(&self) -> Value {
        self.wait("a modal", |inner| {
            inner.views.last().map(|(_, v)| v.clone())
        })
    }

    /// `person` sends the modal `view` with `text` in its input.
    pub fn submit(&self, person: Person, view: &Value, text: &str) {
        let mut view = view.clone();
        view["id"] = json!("V0");
        view["state"] =
            json!({"values": {"answer": {"text": {"type": "plain_text_input", "value": text}}}});
        self.send(json!({
            "type": "view_submission",
            "user": {"id": person.id, "username": person.username, "name": person.username, "team_id": "T0"},
            "team": {"id": "T0"},
            "view": view,
        }));
    }
}

/// The Socket Mode server, on a thread of its own: its address.
fn serve_socket(
    inner: Arc<Mutex<Inner>>,
    queued: Arc<tokio::sync::Notify>,
) -> std::net::SocketAddr {
    let (bound, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            bound.send(listener.local_addr().unwrap()).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (inner, queued) = (inner.clone(), queued.clone());
                tokio::spawn(async move {
                    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
                        return;
                    };
                    inner.lock().unwrap().connections += 1;
                    let hello = json!({"type": "hello", "num_connections": 1,
                        "connection_info": {"app_id": "A0FAKE"}});
                    if ws.send(Frame::text(hello.to_string())).await.is_err() {
                        return;
                    }
                    // Every envelope not acknowledged yet goes on it, as
                    // Slack sends one again until it is.
                    let mut sent = std::collections::HashSet::new();
                    loop {
                        let woken = queued.notified();
                        let pending: Vec<Value> = {
                            let inner = inner.lock().unwrap();
                            inner
                                .queued
                                .iter()
                                .filter(|e| {
                                    let id = e["envelope_id"].as_str().unwrap_or_default();
                                    !sent.contains(id) && !inner.acks.iter().any(|a| a == id)
                                })
                                .cloned()
                                .collect()
                        };
                        for envelope in pending {
                            if ws.send(Frame::text(envelope.to_string())).await.is_err() {
                                return;
                            }
                            sent.insert(
                                envelope["envelope_id"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_owned(),
                            );
                        }
                        tokio::select! {
                            () = woken => {}
                            frame = ws.next() => match frame {
                                Some(Ok(Frame::Text(text))) => {
                                    if let Ok(ack) = serde_json::from_str::<Value>(&text)
                                        && let Some(id) = ack["envelope_id"].as_str()
                                    {
                                        inner.lock().unwrap().acks.push(id.to_owned());
                                    }
                                }
                                Some(Ok(_)) => {}
                                _ => return,
                            },
                        }
                    }
                });
            }
        });
    });
    address.recv().unwrap()
}

type Reply = (StatusCode, Value, Option<u64>);

async fn respond(
    inner: Arc<Mutex<Inner>>,
    socket: std::net::SocketAddr,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let method = request
        .uri()
        .path()
        .strip_prefix("/api/")
        .unwrap_or_default()
        .to_owned();
    let token = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    let body = request.into_body().collect().await?.to_bytes();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (status, reply, retry_after) = call(&inner, socket, &method, &token, &body);
    inner
        .lock()
        .unwrap()
        .calls
        .push((method, Instant::now(), status.as_u16()));
    let mut response = Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8");
    if let Some(wait) = retry_after {
        response = response.header("retry-after", wait.to_string());
    }
    Ok(response
        .body(Full::new(Bytes::from(reply.to_string())))
        .unwrap())
}

fn ok(reply: Value) -> Reply {
    let mut reply = reply;
    reply["ok"] = true.into();
    (StatusCode::OK, reply, None)
}

fn error(error: &str) -> Reply {
    (StatusCode::OK, json!({"ok": false, "error": error}), None)
}

fn call(
    inner: &Mutex<Inner>,
    socket: std::net::SocketAddr,
    method: &str,
    token: &str,
    body: &Value,
) -> Reply {
    let mut inner = inner.lock().unwrap();
    if inner.down {
        return (StatusCode::BAD_GATEWAY, json!({}), None);
    }
    if let Some((times, retry_after)) = inner.throttled.get_mut(method)
        && *times > 0
    {
        *times -= 1;
        let wait = *retry_after;
        return (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"ok": false, "error": "ratelimited"}),
            Some(wait),
        );
    }
    let wanted = match method {
        "apps.connections.open" => APP_TOKEN,
        _ => BOT_TOKEN,
    };
    if token != wanted {
        return error("invalid_auth");
    }
    match method {
        "apps.connections.open" => {
            ok(json!({"url": format!("ws://{socket}/link/?ticket=t1&app_id=A0FAKE")}))
        }
        "chat.postMessage" => {
            if body["channel"] != CHANNEL {
                return error("channel_not_found");
            }
            if let Err(why) = checked_blocks(&body["blocks"]) {
                return error(why);
            }
            let text = body["text"].as_str().unwrap_or_default();
            if inner.refused.iter().any(|refused| text.contains(refused)) {
                return error("invalid_blocks");
            }
            inner.next_ts += 1;
            let ts = format!("1700000000.{:06}", inner.next_ts);
            inner.posted.push(Posted {
                ts: ts.clone(),
                text: body["text"].as_str().unwrap_or_default().to_owned(),
                blocks: body["blocks"].as_array().cloned().unwrap_or_default(),
                updates: 0,
            });
            ok(json!({"channel": CHANNEL, "ts": ts}))
        }
        "chat.update" => {
            if let Err(why) = checked_blocks(&body["blocks"]) {
                return error(why);
            }
            let text = body["text"].as_str().unwrap_or_default();
            if inner.refused.iter().any(|refused| text.contains(refused)) {
                return error("invalid_blocks");
            }
            let Some(message) = inner
                .posted
                .iter_mut()
                .find(|m| body["channel"] == CHANNEL && body["ts"] == m.ts.as_str())
            else {
                return error("message_not_found");
            };
            message.text = body["text"].as_str().unwrap_or_default().to_owned();
            message.blocks = body["blocks"].as_array().cloned().unwrap_or_default();
            message.updates += 1;
            ok(json!({"channel": CHANNEL, "ts": message.ts}))
        }
        "chat.postEphemeral" => {
            let (Some(user), Some(text)) = (body["user"].as_str(), body["text"].as_str()) else {
                return error("invalid_arguments");
            };
            inner.told.push((user.to_owned(), text.to_owned()));
            ok(json!({"message_ts": "1700000000.999999"}))
        }
        "views.open" => {
            let trigger = body["trigger_id"].as_str().unwrap_or_default();
            let Some(at) = inner.triggers.iter().position(|t| t == trigger) else {
                return error("invalid_trigger_id");
            };
            inner.triggers.remove(at);
            let view = &body["view"];
            let title = view["title"]["text"].as_str().unwrap_or_default();
            if view["type"] != "modal" || title.is_empty() || title.chars().count() > 24 {
                return error("invalid_arguments");
            }
            if let Err(why) = checked_blocks(&view["blocks"]) {
                return error(why);
            }
            inner.views.push((trigger.to_owned(), view.clone()));
            ok(json!({"view": {"id": "V0"}}))
        }
        _ => error("unknown_method"),
    }
}

/// Block Kit's limits, as its reference gives them: at most 50 blocks; a
/// section's text at most 3000 characters; an actions block at most 25
/// elements, with action ids unique in the message and at most 255
/// characters; a button's text at most 75 characters and its value at most
/// 2000; checkboxes at most 10 options.
fn checked_blocks(blocks: &Value) -> Result<(), &'static str> {
    let Some(blocks) = blocks.as_array() else {
        return Ok(());
    };
    if blocks.len() > 50 {
        return Err("invalid_blocks");
    }
    let mut action_ids = Vec::new();
    for block in blocks {
        if block["text"]["text"]
            .as_str()
            .is_some_and(|t| t.chars().count() > 3000)
        {
            return Err("invalid_blocks");
        }
        if block["type"] != "actions" {
            continue;
        }
        let elements = block["elements"].as_array().ok_or("invalid_blocks")?;
        if elements.is_empty() || elements.len() > 25 {
            return Err("invalid_blocks");
        }
        for element in elements {
            let id = element["action_id"].as_str().ok_or("invalid_blocks")?;
            if id.is_empty() || id.len() > 255 || action_ids.contains(&id) {
                return Err("invalid_blocks");
            }
            action_ids.push(id);
            match element["type"].as_str() {
                Some("button") => {
                    let text = element["text"]["text"].as_str().unwrap_or_default();
                    let value = element["value"].as_str().unwrap_or_default();
                    if text.is_empty() || text.chars().count() > 75 || value.len() > 2000 {
                        return Err("invalid_blocks");
                    }
                }
                Some("checkboxes") => {
                    let options = element["options"].as_array().ok_or("invalid_blocks")?;
                    if options.is_empty() || options.len() > 10 {
                        return Err("invalid_blocks");
                    }
                }
                _ => return Err("invalid_blocks"),
            }
        }
    }
    Ok(())
}
