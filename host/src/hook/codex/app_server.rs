//! A client's connection to Codex's app server: JSON-RPC (without the
//! `"jsonrpc"` member, as Codex speaks it), one message per WebSocket text
//! frame, over the Unix socket `codex app-server --listen unix://PATH`
//! serves. Everything it receives is untrusted: a message that is not a
//! JSON object, or larger than [`MAX_MESSAGE_BYTES`], is dropped.

use std::path::Path;

use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The largest message taken from the app server: a few questions, a
/// thread's settings.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// A JSON-RPC request's id: a number or a string, compared as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    Text(String),
}

/// What the app server sent, as far as it is read here.
#[derive(Debug)]
pub enum Incoming {
    /// A question of the model's (`item/tool/requestUserInput`), to be
    /// answered with [`Outgoing::respond`]: the request's parameters, read
    /// by the question's own reader, and its thread and turn.
    UserInput {
        id: RequestId,
        params: Value,
        turn: Turn,
    },
    /// A request of another kind (an approval): Codex's UI's.
    OtherRequest,
    /// A notification.
    Notification(Notification),
    /// The answer to a request of ours.
    Response { id: u64, error: Option<Value> },
}

/// The thread and turn a message belongs to.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Turn {
    #[serde(rename = "threadId")]
    pub thread: Option<String>,
    #[serde(rename = "turnId")]
    pub turn: Option<String>,
}

/// A notification: what happened, and the thread it is of (any
/// notification's `threadId`, or its `thread.id`).
#[derive(Debug)]
pub struct Notification {
    pub event: Event,
    pub thread: Option<String>,
}

/// What a notification says, as far as it is read here.
#[derive(Debug, PartialEq)]
pub enum Event {
    /// `thread/started`: a thread Codex keeps (not an ephemeral one, such
    /// as its title's).
    ThreadStarted { thread: String },
    /// `turn/completed` with the status `interrupted`: Esc or Ctrl-C.
    TurnInterrupted { turn: String },
    /// `serverRequest/resolved`: a request of the server's was settled.
    RequestResolved(RequestId),
    /// Anything else.
    Other,
}

#[derive(Deserialize)]
struct ThreadStarted {
    thread: Thread,
}

#[derive(Deserialize)]
struct Thread {
    id: String,
    #[serde(default)]
    ephemeral: bool,
}

#[derive(Deserialize)]
struct TurnCompleted {
    turn: TurnStatus,
}

#[derive(Deserialize)]
struct TurnStatus {
    id: String,
    status: String,
}

#[derive(Deserialize)]
struct Resolved {
    #[serde(rename = "requestId")]
    request_id: RequestId,
}

impl Notification {
    /// `method`'s notification with `params`; what cannot be read as the
    /// method's is [`Event::Other`].
    fn of(method: &str, params: Value) -> Notification {
        fn read<T: serde::de::DeserializeOwned>(params: &Value) -> Option<T> {
            serde_json::from_value(params.clone()).ok()
        }
        let event = match method {
            "thread/started" => read::<ThreadStarted>(&params)
                .filter(|started| !started.thread.ephemeral)
                .map(|started| Event::ThreadStarted {
                    thread: started.thread.id,
                }),
            "turn/completed" => read::<TurnCompleted>(&params)
                .filter(|completed| completed.turn.status == "interrupted")
                .map(|completed| Event::TurnInterrupted {
                    turn: completed.turn.id,
                }),
            "serverRequest/resolved" => read::<Resolved>(&params)
                .map(|resolved| Event::RequestResolved(resolved.request_id)),
            _ => None,
        };
        // Where it is: its `threadId`, or its `thread.id`, whatever else
        // it carries.
        let thread = params
            .get("threadId")
            .and_then(Value::as_str)
            .or_else(|| params.get("thread")?.get("id")?.as_str());
        Notification {
            event: event.unwrap_or(Event::Other),
            thread: thread.map(str::to_owned),
        }
    }
}

/// What is sent to the app server (cheap to clone; the connection's writer
/// owns the socket).
#[derive(Clone)]
pub struct Outgoing(mpsc::UnboundedSender<Value>);

impl Outgoing {
    /// Sends request `id`; its [`Incoming::Response`] says how it went.
    pub fn request(&self, id: u64, method: &str, params: Value) {
        let _ = self
            .0
            .send(json!({"id": id, "method": method, "params": params}));
    }

    pub fn notify(&self, method: &str, params: Value) {
        let _ = self.0.send(json!({"method": method, "params": params}));
    }

    /// Answers the server's request `id`.
    pub fn respond(&self, id: &RequestId, result: Value) {
        let _ = self.0.send(json!({"id": id, "result": result}));
    }
}

/// Connects to the app server at `socket` and introduces this client;
/// what to send with, and what comes, until the server closes.
pub async fn connect(
    socket: &Path,
    name: &str,
) -> std::io::Result<(Outgoing, mpsc::Receiver<Incoming>)> {
    let stream = UnixStream::connect(socket).await?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let (socket, _) =
        tokio_tungstenite::client_async_with_config("ws://localhost/", stream, Some(config))
            .await
            .map_err(std::io::Error::other)?;
    let (mut write, mut read) = socket.split();
    let (send, mut to_send) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        while let Some(message) = to_send.recv().await {
            if write.send(Frame::text(message.to_string())).await.is_err() {
                break;
            }
        }
    });
    let (deliver, incoming) = mpsc::channel(64);
    tokio::spawn(async move {
        while let Some(Ok(frame)) = read.next().await {
            let Frame::Text(text) = frame else {
                continue;
            };
            let Some(message) = serde_json::from_str(&text).ok().and_then(incoming_of) else {
                tracing::debug!("a message from Codex's app server that is not JSON-RPC");
                continue;
            };
            if deliver.send(message).await.is_err() {
                break;
            }
        }
    });
    let outgoing = Outgoing(send);
    outgoing.request(
        0,
        "initialize",
        json!({"clientInfo": {"name": name, "title": "ask-user",
            "version": env!("CARGO_PKG_VERSION")},
            "capabilities": {"experimentalApi": true}}),
    );
    outgoing.notify("initialized", json!({}));
    Ok((outgoing, incoming))
}

/// A message as JSON-RPC has it; `None` for anything else.
fn incoming_of(message: Value) -> Option<Incoming> {
    let Value::Object(mut message) = message else {
        return None;
    };
    let params = message.remove("params").unwrap_or(Value::Null);
    match (message.remove("id"), message.remove("method")) {
        (Some(id), Some(Value::String(method))) => {
            let id: RequestId = serde_json::from_value(id).ok()?;
            Some(match method.as_str() {
                USER_INPUT => Incoming::UserInput {
                    id,
                    turn: serde_json::from_value(params.clone()).unwrap_or_default(),
                    params,
                },
                _ => Incoming::OtherRequest,
            })
        }
        (None, Some(Value::String(method))) => {
            Some(Incoming::Notification(Notification::of(&method, params)))
        }
        (Some(id), None) => Some(Incoming::Response {
            id: id.as_u64()?,
            error: message.remove("error"),
        }),
        _ => None,
    }
}

/// The method of the model's questions.
const USER_INPUT: &str = "item/tool/requestUserInput";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_and_anything_else_is_dropped() {
        let request = json!({"id": 7, "method": USER_INPUT,
            "params": {"a": 1, "threadId": "t1", "turnId": "u1"}});
        assert!(matches!(
            incoming_of(request),
            Some(Incoming::UserInput { id: RequestId::Number(7), params, turn })
                if params["a"] == 1 && turn.thread.as_deref() == Some("t1")
                    && turn.turn.as_deref() == Some("u1")
        ));
        let approval = json!({"id": "a", "method": "item/commandExecution/requestApproval"});
        assert!(matches!(
            incoming_of(approval),
            Some(Incoming::OtherRequest)
        ));
        let note = json!({"method": "serverRequest/resolved", "params": {"requestId": 7, "threadId": "t1"}});
        let Some(Incoming::Notification(note)) = incoming_of(note) else {
            panic!("a notification");
        };
        assert_eq!(note.event, Event::RequestResolved(RequestId::Number(7)));
        assert_eq!(note.thread.as_deref(), Some("t1"));
        let answer = json!({"id": 3, "error": {"code": -32600}});
        assert!(matches!(
            incoming_of(answer),
            Some(Incoming::Response {
                id: 3,
                error: Some(_)
            })
        ));
        for odd in [
            json!([1]),
            json!("x"),
            json!({"method": 5}),
            json!({"id": "x"}),
            json!({"id": [1], "method": USER_INPUT}),
        ] {
            assert!(incoming_of(odd.clone()).is_none(), "{odd}");
        }
    }

    #[test]
    fn notifications_say_what_happened_and_where() {
        let of = |method, params| Notification::of(method, params);
        let started = of(
            "thread/started",
            json!({"thread": {"id": "t1", "ephemeral": false}}),
        );
        assert_eq!(
            started.event,
            Event::ThreadStarted {
                thread: "t1".into()
            }
        );
        assert_eq!(started.thread.as_deref(), Some("t1"));
        let title = of(
            "thread/started",
            json!({"thread": {"id": "t2", "ephemeral": true}}),
        );
        assert_eq!(title.event, Event::Other);
        let interrupted = of(
            "turn/completed",
            json!({"threadId": "t1", "turn": {"id": "u1", "status": "interrupted"}}),
        );
        assert_eq!(
            interrupted.event,
            Event::TurnInterrupted { turn: "u1".into() }
        );
        let done = of(
            "turn/completed",
            json!({"threadId": "t1", "turn": {"id": "u1", "status": "completed"}}),
        );
        assert_eq!(done.event, Event::Other);
        assert_eq!(of("item/started", json!({"threadId": 5})).thread, None);
    }
}
