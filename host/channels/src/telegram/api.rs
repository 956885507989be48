//! The Bot API as the channel calls it: a method's reply read, a 429
//! waited out, and the updates, long-polled.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use ask_user_inbox::notify::ChannelError;

use crate::driver::Source;
use crate::http::{self, Read};
use crate::secret::Secret;

/// How long one `getUpdates` waits for an update.
const POLL: Duration = Duration::from_secs(30);

/// The most updates one `getUpdates` brings (Telegram's default is 100):
/// their reply stays well within [`http::MAX_REPLY_BYTES`].
const UPDATES_PER_POLL: usize = 20;

/// How long any other call may take.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The Bot API at `base` (its address with the token).
#[derive(Debug, Clone)]
pub(super) struct Api {
    base: Secret,
    http: reqwest::Client,
}

/// What a reply of the Bot API says: its result, a wait (429), or why
/// it failed.
fn read<T: serde::de::DeserializeOwned>(reply: http::Reply) -> Read<T> {
    let status = reply.status;
    let Ok(reply) = serde_json::from_slice::<Reply<T>>(&reply.body) else {
        let why = format!("the Bot API replied {status}");
        return Read::Done(Err(match status.is_server_error() || status.is_success() {
            true => ChannelError::down(why),
            false => ChannelError::refused(why),
        }));
    };
    let description = reply.description.unwrap_or_default();
    Read::Done(match (reply.ok, reply.result, reply.error_code) {
        (true, Some(result), _) => Ok(result),
        (true, None, _) => Err(ChannelError::down("a reply with no result")),
        (false, _, Some(429)) => {
            return Read::Wait(
                reply
                    .parameters
                    .and_then(|p| p.retry_after)
                    .map(Duration::from_secs),
            );
        }
        (false, _, Some(code)) if code >= 500 => {
            Err(ChannelError::down(format!("{code} {description}")))
        }
        (false, _, code) => Err(ChannelError::refused(format!(
            "{} {description}",
            code.unwrap_or(status.as_u16())
        ))),
    })
}

/// The Bot API's reply.
#[derive(Deserialize)]
struct Reply<T> {
    ok: bool,
    result: Option<T>,
    error_code: Option<u16>,
    description: Option<String>,
    parameters: Option<ReplyParameters>,
}

#[derive(Deserialize)]
struct ReplyParameters {
    retry_after: Option<u64>,
}

impl Api {
    /// The Bot API at `base` (its address, then `/bot` and the token).
    pub(super) fn new(base: Secret, http: reqwest::Client) -> Self {
        Api { base, http }
    }

    /// Calls `method` with `body`, waiting as long as a 429 says (a few
    /// times).
    pub(super) async fn call<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<T, ChannelError> {
        let request = || {
            self.http
                .post(format!("{}/{method}", self.base.0))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.to_string())
                .timeout(timeout)
        };
        http::call(method, request, read).await
    }

    /// The updates from `offset` on, waiting up to [`POLL`] for one.
    async fn updates(self, offset: i64) -> Result<Vec<Update>, ChannelError> {
        let body = json!({
            "offset": offset,
            "limit": UPDATES_PER_POLL,
            "timeout": POLL.as_secs(),
            "allowed_updates": ["message", "callback_query"],
        });
        let updates: Vec<Value> = self.call("getUpdates", &body, POLL + CALL_TIMEOUT).await?;
        // One update that cannot be read (a field missing, another shape)
        // is passed over, logged, and read past: it never holds up the
        // rest.
        Ok(updates
            .into_iter()
            .filter_map(|update| {
                let id = update["update_id"].as_i64();
                serde_json::from_value(update)
                    .inspect_err(|error| {
                        tracing::warn!(update_id = ?id, %error, "telegram: an update that cannot be read is passed over");
                    })
                    .ok()
                    .or(id.map(Update::unread))
            })
            .collect())
    }
}

/// What `getUpdates` gives: a message or a button pressed (other kinds are
/// not asked for).
#[derive(Debug, Deserialize)]
pub(super) struct Update {
    pub(super) update_id: i64,
    pub(super) message: Option<Message>,
    pub(super) callback_query: Option<CallbackQuery>,
}

impl Update {
    /// An update that could not be read: nothing to do, but its id, to
    /// read past it.
    fn unread(update_id: i64) -> Self {
        Update {
            update_id,
            message: None,
            callback_query: None,
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct Message {
    pub(super) message_id: i64,
    pub(super) from: Option<User>,
    pub(super) chat: Chat,
    pub(super) text: Option<String>,
    pub(super) reply_to_message: Option<Box<Message>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Chat {
    pub(super) id: i64,
}

#[derive(Debug, Deserialize)]
pub(super) struct User {
    pub(super) id: i64,
    #[serde(default)]
    pub(super) first_name: String,
    pub(super) username: Option<String>,
}

impl User {
    /// As the inbox names who answered.
    pub(super) fn name(&self) -> String {
        match &self.username {
            Some(username) => format!("@{username}"),
            None if !self.first_name.is_empty() => self.first_name.clone(),
            None => format!("Telegram user {}", self.id),
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct CallbackQuery {
    pub(super) id: String,
    pub(super) from: User,
    pub(super) message: Option<Message>,
    pub(super) data: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct SentMessage {
    pub(super) message_id: i64,
}

/// The bot's updates, from `offset` on: once a delivery was taken (and
/// kept), the next poll asks past it, which confirms it to Telegram.
pub(super) struct Poller {
    pub(super) api: Api,
    pub(super) offset: i64,
}

impl Source for Poller {
    type Item = Update;

    async fn next(mut self) -> (Self, Result<Vec<Update>, ChannelError>) {
        let updates = self.api.clone().updates(self.offset).await;
        if let Ok(updates) = &updates
            && let Some(last) = updates.iter().map(|u| u.update_id).max()
        {
            self.offset = self.offset.max(last + 1);
        }
        (self, updates)
    }
}
