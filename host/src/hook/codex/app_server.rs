//! A client's connection to Codex's app server: JSON-RPC (without the
//! `"jsonrpc"` member, as Codex speaks it), one message per WebSocket text
//! frame, over the Unix socket `codex app-server --listen unix://PATH`
//! serves. Everything it receives is untrusted: a message that is not a
//! JSON object, or larger than [`MAX_MESSAGE_BYTES`], is dropped.

use std::path::Path;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The largest message taken from the app server: a few questions, a
/// thread's settings.
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// What the app server sent.
#[derive(Debug)]
pub enum Incoming {
    /// A request of the server's, to be answered with [`Outgoing::respond`].
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A notification.
    Notification { method: String, params: Value },
    /// The answer to a request of ours.
    Response { id: u64, error: Option<Value> },
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
    pub fn respond(&self, id: &Value, result: Value) {
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
        (Some(id), Some(Value::String(method))) => Some(Incoming::Request { id, method, params }),
        (None, Some(Value::String(method))) => Some(Incoming::Notification { method, params }),
        (Some(id), None) => Some(Incoming::Response {
            id: id.as_u64()?,
            error: message.remove("error"),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_and_anything_else_is_dropped() {
        let request = json!({"id": 7, "method": "item/tool/requestUserInput", "params": {"a": 1}});
        assert!(matches!(
            incoming_of(request),
            Some(Incoming::Request { id, method, params })
                if id == 7 && method == "item/tool/requestUserInput" && params["a"] == 1
        ));
        let note = json!({"method": "serverRequest/resolved", "params": {"requestId": 7}});
        assert!(matches!(
            incoming_of(note),
            Some(Incoming::Notification { .. })
        ));
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
        ] {
            assert!(incoming_of(odd.clone()).is_none(), "{odd}");
        }
    }
}
