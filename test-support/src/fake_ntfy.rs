//! An ntfy-compatible server of ours on 127.0.0.1, written from ntfy's
//! publishing and subscribing docs (docs/publish.md, docs/subscribe/api.md
//! of ntfy): publishing as JSON to the root (`{topic, title, message, tags,
//! click, actions, sequence_id}`, at most three actions; a message kept with
//! its sequence, as a later one of the same sequence updates it) or as a
//! plain body to a topic's URL (with `Title` and `X-Sequence-ID` headers),
//! and each topic's JSON stream (`GET /<topic>/json[?since=<id>]`: an
//! `open` event, then one message per line, those after `since` first). A
//! test plays the phone: it taps an action, which posts the action's body
//! to the action's URL, as ntfy's apps do.

use crate::http_thread;

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};

/// The longest a test waits for the inbox to publish something.
const BOUND: Duration = Duration::from_secs(60);

/// A message as the server keeps it.
#[derive(Debug, Clone)]
pub struct Published {
    pub id: String,
    pub topic: String,
    pub title: String,
    pub message: String,
    pub click: Option<String>,
    pub actions: Vec<Value>,
    /// The sequence it updates (`sequence_id`, ntfy 2.16 and later).
    pub sequence_id: Option<String>,
    /// The access token it was published with (`Authorization: Bearer`).
    pub token: Option<String>,
}

impl Published {
    fn json(&self) -> Value {
        json!({
            "id": self.id,
            "time": 0,
            "event": "message",
            "topic": self.topic,
            "title": self.title,
            "message": self.message,
        })
    }
}

#[derive(Default)]
struct Inner {
    messages: Vec<Published>,
    next: u64,
    down: bool,
    /// The streams open, by topic.
    streams: HashMap<String, Vec<tokio::sync::mpsc::UnboundedSender<Bytes>>>,
}

#[derive(Clone)]
pub struct FakeNtfy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    inner: Arc<Mutex<Inner>>,
}

impl FakeNtfy {
    pub fn start() -> FakeNtfy {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let serving = inner.clone();
        let address = http_thread::serve(move |request, _| respond(serving.clone(), request));
        FakeNtfy {
            url: format!("http://{address}"),
            inner,
        }
    }

    /// Every request fails with 502 while `down`.
    pub fn set_down(&self, down: bool) {
        self.inner.lock().unwrap().down = down;
    }

    /// The messages of `topic` so far.
    pub fn messages(&self, topic: &str) -> Vec<Published> {
        let inner = self.inner.lock().unwrap();
        inner
            .messages
            .iter()
            .filter(|m| m.topic == topic)
            .cloned()
            .collect()
    }

    /// Waits (read again every 20 ms, at most a minute) for a message of
    /// `topic` whose message or title contains `text`.
    pub fn message(&self, topic: &str, text: &str) -> Published {
        let start = Instant::now();
        loop {
            if let Some(found) = self
                .messages(topic)
                .into_iter()
                .find(|m| m.message.contains(text) || m.title.contains(text))
            {
                return found;
            }
            assert!(
                start.elapsed() < BOUND,
                "waited {BOUND:?} for {text:?} on {topic}: {:#?}",
                self.messages(topic)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Taps the action labelled `label` of `message`, as the phone does:
    /// its body posted to its URL.
    pub fn tap(&self, message: &Published, label: &str) {
        let action = message
            .actions
            .iter()
            .find(|a| a["label"] == label)
            .unwrap_or_else(|| panic!("no action {label:?} in {message:#?}"));
        assert_eq!(action["action"], "http");
        let url = action["url"].as_str().unwrap();
        let topic = url.strip_prefix(&format!("{}/", self.url)).unwrap();
        self.post(topic, action["body"].as_str().unwrap());
    }

    /// Posts `body` to `topic`, as anyone may.
    pub fn post(&self, topic: &str, body: &str) {
        publish(
            &mut self.inner.lock().unwrap(),
            topic,
            json!({"message": body}),
            None,
        );
    }
}

/// Keeps a message and sends it to the topic's streams.
fn publish(inner: &mut Inner, topic: &str, message: Value, token: Option<String>) -> Published {
    inner.next += 1;
    let published = Published {
        id: format!("m{:011}", inner.next),
        topic: topic.to_owned(),
        title: message["title"].as_str().unwrap_or_default().to_owned(),
        message: message["message"].as_str().unwrap_or_default().to_owned(),
        click: message["click"].as_str().map(str::to_owned),
        actions: message["actions"].as_array().cloned().unwrap_or_default(),
        sequence_id: message["sequence_id"].as_str().map(str::to_owned),
        token,
    };
    let line = Bytes::from(format!("{}\n", published.json()));
    if let Some(streams) = inner.streams.get_mut(topic) {
        streams.retain(|stream| stream.send(line.clone()).is_ok());
    }
    inner.messages.push(published.clone());
    published
}

/// A stream's body: lines as they come.
struct Lines(tokio::sync::mpsc::UnboundedReceiver<Bytes>);

impl hyper::body::Body for Lines {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|line| line.map(|l| Ok(Frame::data(l))))
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn reply(status: StatusCode, body: Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .unwrap()
}

fn topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

async fn respond(
    inner: Arc<Mutex<Inner>>,
    request: Request<Incoming>,
) -> Result<Response<Body>, hyper::Error> {
    if inner.lock().unwrap().down {
        return Ok(Response::builder()
            .status(StatusCode::BAD_GATEWAY)
            .body(Full::new(Bytes::from_static(b"502 Bad Gateway")).boxed())
            .unwrap());
    }
    let method = request.method().clone();
    let path = request.uri().path().trim_start_matches('/').to_owned();
    let token = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok()?.strip_prefix("Bearer "))
        .map(str::to_owned);
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let (title, sequence) = (header("title"), header("x-sequence-id"));
    let since = request
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("since=")))
        .map(str::to_owned);
    let body = request.into_body().collect().await?.to_bytes();
    let invalid = |why: &str| {
        reply(
            StatusCode::BAD_REQUEST,
            json!({"code": 40000, "http": 400, "error": why}),
        )
    };
    Ok(match (method.as_str(), path.split_once('/')) {
        ("POST" | "PUT", None) if path.is_empty() => {
            let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                return Ok(invalid(
                    "invalid request: request body must be message JSON",
                ));
            };
            let topic = message["topic"].as_str().unwrap_or_default().to_owned();
            if !topic_name(&topic) {
                return Ok(invalid("invalid topic"));
            }
            if message["actions"].as_array().is_some_and(|a| a.len() > 3) {
                return Ok(invalid(
                    "invalid request: actions invalid, too many actions",
                ));
            }
            let published = publish(&mut inner.lock().unwrap(), &topic, message, token);
            reply(StatusCode::OK, published.json())
        }
        ("POST" | "PUT", None) if topic_name(&path) => {
            let message = json!({"message": String::from_utf8_lossy(&body),
                "title": title, "sequence_id": sequence});
            let published = publish(&mut inner.lock().unwrap(), &path, message, token);
            reply(StatusCode::OK, published.json())
        }
        ("GET", Some((topic, "json"))) if topic_name(topic) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let mut inner = inner.lock().unwrap();
            let open = json!({"id": "open", "time": 0, "event": "open", "topic": topic});
            let _ = tx.send(Bytes::from(format!("{open}\n")));
            if let Some(since) = since {
                let after = inner
                    .messages
                    .iter()
                    .position(|m| m.id == since)
                    .map_or(0, |at| at + 1);
                for message in inner.messages[after..].iter().filter(|m| m.topic == topic) {
                    let _ = tx.send(Bytes::from(format!("{}\n", message.json())));
                }
            }
            inner.streams.entry(topic.to_owned()).or_default().push(tx);
            Response::builder()
                .header("content-type", "application/x-ndjson; charset=utf-8")
                .body(Lines(rx).boxed())
                .unwrap()
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            json!({"code": 40401, "http": 404, "error": "page not found"}),
        ),
    })
}
