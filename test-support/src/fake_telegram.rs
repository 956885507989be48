//! A Telegram Bot API of ours on 127.0.0.1 (no machine here reaches
//! Telegram), written from the Bot API reference
//! (core.telegram.org/bots/api): `getUpdates` with `offset`, `limit` and `timeout`
//! (an update is confirmed, and forgotten, once `getUpdates` is called with
//! a higher offset; with none waiting, the call waits up to `timeout`
//! seconds for one), `getMe`, `sendMessage`, `editMessageText`,
//! `editMessageReplyMarkup` and `answerCallbackQuery`, each checked as the
//! reference says (HTML entities, 4096 characters of text, 1–64 bytes of
//! `callback_data`, 0–200 characters of a callback answer, "message is not
//! modified"), replies `{ok, result}` or `{ok: false, error_code,
//! description, parameters}`, 429 with `retry_after` when told to throttle,
//! and 502 while "down". As Telegram does, a `getUpdates` ends one still
//! waiting, which is answered 409 ("terminated by other getUpdates
//! request"): two consumers of one bot are seen. A test plays the people in the chat: it presses
//! the bot's buttons and replies to its messages, as updates.

use crate::http_thread;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};

/// The longest a test waits for the bot to do something.
const BOUND: Duration = Duration::from_secs(60);

/// The bot's token the fake takes.
pub const TOKEN: &str = "4242:fake-Token_for-tests";

/// The bot's username, as `getMe` says it.
pub const BOT_USERNAME: &str = "ask_test_bot";

/// The chat the bot posts in (a private chat's id is its person's).
pub const CHAT: i64 = 1001;

/// A person in the chat.
#[derive(Debug, Clone, Copy)]
pub struct Person {
    pub id: i64,
    pub username: &'static str,
}

/// Allowed to answer, in the tests' configs.
pub const ANA: Person = Person {
    id: 1001,
    username: "ana",
};

/// Not allowed.
pub const MALLORY: Person = Person {
    id: 666,
    username: "mallory",
};

/// A message the bot sent, as it is now.
#[derive(Debug, Clone)]
pub struct Sent {
    pub message_id: i64,
    pub chat_id: i64,
    /// As sent (HTML).
    pub text: String,
    /// The inline keyboard's buttons, row by row: (text, callback_data).
    pub buttons: Vec<Vec<(String, String)>>,
    pub force_reply: bool,
    pub reply_to: Option<i64>,
    pub edits: usize,
}

impl Sent {
    /// The data of the button whose text contains `text`.
    pub fn button(&self, text: &str) -> String {
        self.buttons
            .iter()
            .flatten()
            .find(|(label, _)| label.contains(text))
            .map(|(_, data)| data.clone())
            .unwrap_or_else(|| panic!("no button {text:?} in {self:?}"))
    }
}

/// A call the bot made: its method, when, its body, and the reply's
/// status (0 while it is not answered).
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub at: Instant,
    pub body: Value,
    pub status: u16,
}

#[derive(Default)]
struct Inner {
    /// Updates not confirmed yet.
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    next_query: i64,
    /// The bot's messages, by id.
    sent: BTreeMap<i64, Sent>,
    calls: Vec<Call>,
    /// 502 to every call.
    down: bool,
    /// Calls of a method to answer 429 (how many more, retry_after).
    throttled: HashMap<String, (usize, u64)>,
    /// A `sendMessage` whose text has one of these is refused.
    refused: Vec<String>,
    /// Counts `getUpdates` calls: a new one ends the one still waiting.
    polls: u64,
    /// `getUpdates` calls ended by another (two consumers of one bot).
    conflicts: usize,
    /// The next reply with updates carries this many bytes more.
    padding: Option<usize>,
}

struct Shared {
    inner: Mutex<Inner>,
    /// Wakes a waiting `getUpdates`.
    updated: tokio::sync::Notify,
}

/// The fake, serving for the life of the test process.
#[derive(Clone)]
pub struct FakeTelegram {
    /// What `api_url` is set to.
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeTelegram {
    pub fn start() -> FakeTelegram {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                next_update: 1,
                next_message: 100,
                ..Inner::default()
            }),
            updated: tokio::sync::Notify::new(),
        });
        let serving = shared.clone();
        let address = http_thread::serve(move |request, _| respond(serving.clone(), request));
        FakeTelegram {
            url: format!("http://{address}"),
            shared,
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap()
    }

    /// Every call fails with 502 while `down`.
    pub fn set_down(&self, down: bool) {
        self.inner().down = down;
    }

    /// The next `times` calls of `method` are answered 429, `retry_after`
    /// seconds.
    pub fn throttle(&self, method: &str, times: usize, retry_after: u64) {
        self.inner()
            .throttled
            .insert(method.to_owned(), (times, retry_after));
    }

    /// Every `sendMessage` whose text has `text` is refused (400), as
    /// Telegram refuses a message it cannot show.
    pub fn refuse(&self, text: &str) {
        self.inner().refused.push(text.to_owned());
    }

    /// The calls so far, of every method.
    pub fn all_calls(&self) -> Vec<Call> {
        self.inner().calls.clone()
    }

    /// The calls of `method` so far.
    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.inner()
            .calls
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }

    /// Waits until `found` finds something in the bot's messages, and
    /// returns it; the bot is another process, with no event to wait on
    /// from here: read again every 20 ms, for at most a minute.
    pub fn wait_for<T>(&self, what: &str, found: impl Fn(&[Sent]) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            let sent: Vec<Sent> = self.inner().sent.values().cloned().collect();
            if let Some(found) = found(&sent) {
                return found;
            }
            assert!(
                start.elapsed() < BOUND,
                "waited {BOUND:?} for {what}; the bot sent {sent:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the bot's message whose text contains `text` and for which
    /// `holds`.
    pub fn message(&self, text: &str, holds: impl Fn(&Sent) -> bool) -> Sent {
        self.wait_for(&format!("a message with {text:?}"), |sent| {
            sent.iter()
                .find(|m| m.text.contains(text) && holds(m))
                .cloned()
        })
    }

    /// The answer to callback query `id` (what the person was told), once
    /// the bot gave it.
    pub fn told(&self, query: &str) -> Value {
        let start = Instant::now();
        loop {
            if let Some(call) = self
                .calls("answerCallbackQuery")
                .into_iter()
                .find(|call| call.body["callback_query_id"] == query)
            {
                return call.body;
            }
            assert!(
                start.elapsed() < BOUND,
                "waited {BOUND:?} for the answer to {query}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `person` presses the button with `data` on message `message_id`:
    /// the callback query's id.
    pub fn press(&self, person: Person, message_id: i64, data: &str) -> String {
        let mut inner = self.inner();
        inner.next_query += 1;
        let query = format!("q{}", inner.next_query);
        let message = inner
            .sent
            .get(&message_id)
            .map(message_json)
            .unwrap_or_else(|| json!({"message_id": message_id, "chat": chat(), "date": 0}));
        push(
            &mut inner,
            json!({"callback_query": {
                "id": query,
                "from": user(person),
                "message": message,
                "chat_instance": "1",
                "data": data,
            }}),
        );
        drop(inner);
        self.shared.updated.notify_waiters();
        query
    }

    /// `person` writes `text` in the chat (`/start`, say).
    pub fn write(&self, person: Person, text: &str) {
        self.message_from(person, text, None);
    }

    /// `person` writes `text` in the chat, replying to `to`.
    pub fn reply(&self, person: Person, to: i64, text: &str) {
        self.message_from(person, text, Some(to));
    }

    /// `person`'s message `text`, in reply to `to` when given.
    fn message_from(&self, person: Person, text: &str, to: Option<i64>) {
        let mut inner = self.inner();
        inner.next_message += 1;
        let mut message = json!({
            "message_id": inner.next_message,
            "from": user(person),
            "chat": chat(),
            "date": 0,
            "text": text,
        });
        if let Some(to) = to {
            message["reply_to_message"] = inner
                .sent
                .get(&to)
                .map(message_json)
                .unwrap_or_else(|| json!({"message_id": to, "chat": chat(), "date": 0}));
        }
        push(&mut inner, json!({ "message": message }));
        drop(inner);
        self.shared.updated.notify_waiters();
    }

    /// An update as given, whatever its shape (its id is set): what a
    /// newer Bot API, or a broken one, may send.
    pub fn push_raw(&self, update: Value) {
        push(&mut self.inner(), update);
        self.shared.updated.notify_waiters();
    }

    /// The next reply that carries updates is `bytes` longer (a field
    /// the bot does not read): a service that answers too much.
    pub fn pad_next_updates(&self, bytes: usize) {
        self.inner().padding = Some(bytes);
    }

    /// The updates not confirmed yet.
    pub fn unconfirmed(&self) -> usize {
        self.inner().updates.len()
    }

    /// How many `getUpdates` were ended by another one.
    pub fn conflicts(&self) -> usize {
        self.inner().conflicts
    }
}

fn push(inner: &mut Inner, mut update: Value) {
    update["update_id"] = inner.next_update.into();
    inner.next_update += 1;
    inner.updates.push(update);
}

fn chat() -> Value {
    json!({"id": CHAT, "type": "private", "first_name": "Ana"})
}

fn user(person: Person) -> Value {
    json!({
        "id": person.id,
        "is_bot": false,
        "first_name": person.username,
        "username": person.username,
    })
}

fn message_json(sent: &Sent) -> Value {
    let mut message = json!({
        "message_id": sent.message_id,
        "from": {"id": 4242, "is_bot": true, "first_name": "bot", "username": "ask_bot"},
        "chat": chat(),
        "date": 0,
        "text": visible(&sent.text).unwrap_or_default(),
    });
    if !sent.buttons.is_empty() {
        message["reply_markup"] = keyboard_json(&sent.buttons);
    }
    message
}

fn keyboard_json(buttons: &[Vec<(String, String)>]) -> Value {
    let rows: Vec<Value> = buttons
        .iter()
        .map(|row| {
            row.iter()
                .map(|(text, data)| json!({"text": text, "callback_data": data}))
                .collect()
        })
        .collect();
    json!({"inline_keyboard": rows})
}

/// An error reply as the Bot API gives it.
fn error(code: u16, description: &str) -> (StatusCode, Value) {
    (
        StatusCode::from_u16(code).unwrap(),
        json!({"ok": false, "error_code": code, "description": description}),
    )
}

async fn respond(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = request.uri().path().to_owned();
    let body = request.into_body().collect().await?.to_bytes();
    let (status, reply) = match path
        .strip_prefix("/bot")
        .and_then(|rest| rest.split_once('/'))
    {
        Some((token, method)) if token == TOKEN => {
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            call(&shared, method, body).await
        }
        Some(_) => error(401, "Unauthorized"),
        None => error(404, "Not Found"),
    };
    if status == StatusCode::BAD_GATEWAY {
        return Ok(Response::builder()
            .status(status)
            .body(Full::new(Bytes::from_static(
                b"<html>502 Bad Gateway</html>",
            )))
            .unwrap());
    }
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(reply.to_string())))
        .unwrap())
}

/// Answers a call, and records it as it starts (a `getUpdates` is seen
/// while it waits); its status once answered.
async fn call(shared: &Shared, method: &str, body: Value) -> (StatusCode, Value) {
    let index = {
        let mut inner = shared.inner.lock().unwrap();
        inner.calls.push(Call {
            method: method.to_owned(),
            at: Instant::now(),
            body: body.clone(),
            status: 0,
        });
        inner.calls.len() - 1
    };
    let (status, reply) = reply(shared, method, &body).await;
    shared.inner.lock().unwrap().calls[index].status = status.as_u16();
    (status, reply)
}

async fn reply(shared: &Shared, method: &str, body: &Value) -> (StatusCode, Value) {
    {
        let mut inner = shared.inner.lock().unwrap();
        if inner.down {
            return (StatusCode::BAD_GATEWAY, Value::Null);
        }
        if let Some((times, retry_after)) = inner.throttled.get_mut(method)
            && *times > 0
        {
            *times -= 1;
            let (status, mut reply) = error(
                429,
                &format!("Too Many Requests: retry after {retry_after}"),
            );
            reply["parameters"] = json!({"retry_after": retry_after});
            return (status, reply);
        }
    }
    let result = match method {
        "getUpdates" => return updates(shared, body).await,
        "sendMessage" => send_message(&mut shared.inner.lock().unwrap(), body),
        "editMessageText" | "editMessageReplyMarkup" => {
            edit(&mut shared.inner.lock().unwrap(), method, body)
        }
        "getMe" => Ok(json!({
            "id": 4242, "is_bot": true, "first_name": "Ask", "username": BOT_USERNAME,
        })),
        "answerCallbackQuery" => match body["text"].as_str().map(|t| t.chars().count()) {
            Some(n) if n > 200 => Err(error(400, "Bad Request: MESSAGE_TOO_LONG")),
            _ => Ok(json!(true)),
        },
        _ => Err(error(404, "Not Found: method not found")),
    };
    match result {
        Ok(result) => (StatusCode::OK, json!({"ok": true, "result": result})),
        Err(refused) => refused,
    }
}

async fn updates(shared: &Shared, body: &Value) -> (StatusCode, Value) {
    let offset = body["offset"].as_i64().unwrap_or(0);
    let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0));
    let until = tokio::time::Instant::now() + timeout;
    let poll = {
        let mut inner = shared.inner.lock().unwrap();
        inner.polls += 1;
        inner.polls
    };
    // Ends the one waiting, if any.
    shared.updated.notify_waiters();
    loop {
        let woken = shared.updated.notified();
        {
            let mut inner = shared.inner.lock().unwrap();
            if inner.polls != poll {
                inner.conflicts += 1;
                return error(
                    409,
                    "Conflict: terminated by other getUpdates request; make sure that only one \
                     bot instance is running",
                );
            }
            // Confirmed: forgotten.
            inner
                .updates
                .retain(|update| update["update_id"].as_i64() >= Some(offset));
            if !inner.updates.is_empty() {
                let limit = body["limit"].as_u64().map_or(100, |n| n.clamp(1, 100));
                let updates: Vec<Value> =
                    inner.updates.iter().take(limit as usize).cloned().collect();
                let mut reply = json!({"ok": true, "result": updates});
                if let Some(bytes) = inner.padding.take() {
                    reply["padding"] = "x".repeat(bytes).into();
                }
                return (StatusCode::OK, reply);
            }
        }
        if tokio::time::timeout_at(until, woken).await.is_err() {
            return (StatusCode::OK, json!({"ok": true, "result": []}));
        }
    }
}

type Refusal = (StatusCode, Value);

fn send_message(inner: &mut Inner, body: &Value) -> Result<Value, Refusal> {
    if body["chat_id"].as_i64() != Some(CHAT) {
        return Err(error(400, "Bad Request: chat not found"));
    }
    let text = checked_text(body)?;
    if inner.refused.iter().any(|refused| text.contains(refused)) {
        return Err(error(400, "Bad Request: message can't be shown"));
    }
    let buttons = checked_keyboard(&body["reply_markup"])?;
    inner.next_message += 1;
    let sent = Sent {
        message_id: inner.next_message,
        chat_id: CHAT,
        text,
        buttons,
        force_reply: body["reply_markup"]["force_reply"] == true,
        reply_to: body["reply_parameters"]["message_id"].as_i64(),
        edits: 0,
    };
    let reply = message_json(&sent);
    inner.sent.insert(sent.message_id, sent);
    Ok(reply)
}

fn edit(inner: &mut Inner, method: &str, body: &Value) -> Result<Value, Refusal> {
    let text = match method {
        "editMessageText" => Some(checked_text(body)?),
        _ => None,
    };
    let buttons = checked_keyboard(&body["reply_markup"])?;
    let Some(sent) = body["message_id"]
        .as_i64()
        .filter(|_| body["chat_id"].as_i64() == Some(CHAT))
        .and_then(|id| inner.sent.get_mut(&id))
    else {
        return Err(error(400, "Bad Request: message to edit not found"));
    };
    let text = text.unwrap_or_else(|| sent.text.clone());
    if text == sent.text && buttons == sent.buttons {
        return Err(error(
            400,
            "Bad Request: message is not modified: specified new message content and reply \
             markup are exactly the same as a current content and reply markup of the message",
        ));
    }
    sent.text = text;
    sent.buttons = buttons;
    sent.edits += 1;
    Ok(message_json(sent))
}

/// The message's text, checked as the Bot API does: HTML entities parsed,
/// 1–4096 characters once parsed.
fn checked_text(body: &Value) -> Result<String, Refusal> {
    let text = body["text"].as_str().unwrap_or_default();
    let shown = match body["parse_mode"].as_str() {
        Some("HTML") => visible(text)
            .map_err(|why| error(400, &format!("Bad Request: can't parse entities: {why}")))?,
        None => text.to_owned(),
        Some(other) => {
            return Err(error(
                400,
                &format!("Bad Request: unsupported parse_mode {other}"),
            ));
        }
    };
    match shown.chars().count() {
        0 => Err(error(400, "Bad Request: message text is empty")),
        n if n > 4096 => Err(error(400, "Bad Request: message is too long")),
        _ => Ok(text.to_owned()),
    }
}

/// An inline keyboard's buttons, checked: a text, and 1–64 bytes of
/// `callback_data`.
fn checked_keyboard(markup: &Value) -> Result<Vec<Vec<(String, String)>>, Refusal> {
    let Some(rows) = markup["inline_keyboard"].as_array() else {
        return Ok(Vec::new());
    };
    rows.iter()
        .map(|row| {
            row.as_array()
                .into_iter()
                .flatten()
                .map(|button| {
                    let text = button["text"].as_str().unwrap_or_default();
                    let data = button["callback_data"].as_str().unwrap_or_default();
                    if text.is_empty() {
                        return Err(error(
                            400,
                            "Bad Request: text buttons are unallowed in the inline keyboard",
                        ));
                    }
                    if data.is_empty() || data.len() > 64 {
                        return Err(error(400, "Bad Request: BUTTON_DATA_INVALID"));
                    }
                    Ok((text.to_owned(), data.to_owned()))
                })
                .collect()
        })
        .collect()
}

/// What Telegram shows of `html`: its tags (those the Bot API's HTML
/// style takes, each closed) and its entities (`&lt;`, `&gt;`, `&amp;`,
/// `&quot;`, numeric) read; anything else is an error, as the Bot API's.
fn visible(html: &str) -> Result<String, String> {
    const TAGS: &[&str] = &[
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "code",
        "pre",
        "a",
        "blockquote",
        "tg-spoiler",
    ];
    let mut shown = String::new();
    let mut open: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest.find('>').ok_or("unclosed start tag")?;
                let tag = &rest[1..end];
                let (closing, name) = match tag.strip_prefix('/') {
                    Some(name) => (true, name),
                    None => (false, tag.split_whitespace().next().unwrap_or_default()),
                };
                if !TAGS.contains(&name) {
                    return Err(format!("unsupported start tag \"{name}\""));
                }
                if closing {
                    if open.pop().as_deref() != Some(name) {
                        return Err(format!(
                            "can't find end tag corresponding to start tag \"{name}\""
                        ));
                    }
                } else {
                    open.push(name.to_owned());
                }
                rest = &rest[end + 1..];
            }
            '&' => {
                let end = rest.find(';').ok_or("unclosed entity")?;
                let entity = &rest[1..end];
                let char = match entity {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    _ => entity
                        .strip_prefix('#')
                        .and_then(|n| n.parse().ok())
                        .and_then(char::from_u32)
                        .ok_or_else(|| format!("unsupported entity \"{entity}\""))?,
                };
                shown.push(char);
                rest = &rest[end + 1..];
            }
            '>' => return Err("unexpected end tag".into()),
            c => {
                shown.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    match open.pop() {
        Some(tag) => Err(format!(
            "can't find end tag corresponding to start tag \"{tag}\""
        )),
        None => Ok(shown),
    }
}
