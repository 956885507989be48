//! The client-server API as the channel calls it: a call's reply read (a
//! 429 waited out, a refused token told apart), the bot made ready in its
//! room, messages sent and edited, and `/sync`, long-polled.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use ask_user_inbox::notify::{Backoff, ChannelError, ErrorKind};

use crate::driver::Source;
use crate::http::{self, Read};
use crate::secret::Secret;

/// How long one `/sync` waits for an event.
const POLL: Duration = Duration::from_secs(30);

/// How long any other call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The most events of the room one `/sync` brings: their reply stays well
/// within [`http::MAX_REPLY_BYTES`]. More in one poll (a gap, `limited`)
/// are not read: a person whose answer was in it answers again.
const EVENTS_PER_SYNC: usize = 50;

/// The client-server API of the bot's homeserver, for its room.
#[derive(Debug, Clone)]
pub(super) struct Api {
    /// `https://server/_matrix/client/v3`.
    base: String,
    room: String,
    token: Secret,
    http: reqwest::Client,
}

/// An event of the room, as `/sync` gives it.
#[derive(Debug, Deserialize)]
pub(super) struct RoomEvent {
    #[serde(rename = "type")]
    pub kind: String,
    pub event_id: String,
    pub sender: String,
    #[serde(default)]
    pub content: Value,
}

/// What one `/sync` delivered: the room's new events, and where the next
/// one starts.
#[derive(Debug)]
pub(super) struct Delivery {
    pub next_batch: String,
    pub events: Vec<RoomEvent>,
}

/// `/sync`'s reply, as far as it is read.
#[derive(Deserialize)]
struct Synced {
    next_batch: String,
    #[serde(default)]
    rooms: Rooms,
}

#[derive(Default, Deserialize)]
struct Rooms {
    #[serde(default)]
    join: std::collections::BTreeMap<String, Joined>,
}

#[derive(Deserialize)]
struct Joined {
    #[serde(default)]
    timeline: Timeline,
}

#[derive(Default, Deserialize)]
struct Timeline {
    #[serde(default)]
    events: Vec<Value>,
    #[serde(default)]
    limited: bool,
}

/// An error the homeserver gives: `{"errcode": "M_…", "error": "…"}`.
#[derive(Default, Deserialize)]
struct Refusal {
    #[serde(default)]
    errcode: String,
    #[serde(default)]
    error: String,
    retry_after_ms: Option<u64>,
}

impl Api {
    pub(super) fn new(
        homeserver: &str,
        room: String,
        token: Secret,
        http: reqwest::Client,
    ) -> Self {
        Api {
            base: format!("{homeserver}/_matrix/client/v3"),
            room,
            token,
            http,
        }
    }

    /// Calls `path` (under `/_matrix/client/v3`) with `method`, `query` and
    /// `body`; `what` names it in errors.
    async fn call<T: DeserializeOwned>(
        &self,
        what: &str,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<T, ChannelError> {
        let mut url = format!("{}{path}", self.base);
        for (n, (name, value)) in query.iter().enumerate() {
            let start = if n == 0 { '?' } else { '&' };
            url.push_str(&format!("{start}{name}={}", encoded(value)));
        }
        let request = || {
            let request = self
                .http
                .request(method.clone(), &url)
                .bearer_auth(&self.token.0)
                .timeout(timeout);
            match body {
                Some(body) => request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.to_string()),
                None => request,
            }
        };
        http::call(what, request, read).await
    }

    /// Who the bot is, once it is in the room and the room is not
    /// encrypted, and where its reading starts: `since`, kept from before,
    /// or on the first start the room's present, taken before any question
    /// is posted (so that no answer to one is in the past it skips). Tried
    /// again while the homeserver is down. A token the homeserver refuses,
    /// a room the bot may not join, or an encrypted one, is an error that
    /// says so.
    pub(super) async fn ready(&self, since: Option<String>) -> Result<Ready, ChannelError> {
        let mut backoff = Backoff::new();
        loop {
            match self.try_ready(since.clone()).await {
                Err(error) if error.kind() == ErrorKind::Down => {
                    let wait = backoff.failed();
                    tracing::warn!(
                        error = error.report(),
                        ?wait,
                        "matrix: the homeserver cannot be reached; trying again"
                    );
                    tokio::time::sleep(wait).await;
                }
                ready => return ready,
            }
        }
    }

    async fn try_ready(&self, since: Option<String>) -> Result<Ready, ChannelError> {
        #[derive(Deserialize)]
        struct WhoAmI {
            user_id: String,
        }
        let me: WhoAmI = self
            .call(
                "whoami",
                Method::GET,
                "/account/whoami",
                &[],
                None,
                CALL_TIMEOUT,
            )
            .await?;
        let room = encoded(&self.room);
        let joined: Result<Value, _> = self
            .call(
                "join",
                Method::POST,
                &format!("/join/{room}"),
                &[],
                Some(&json!({})),
                CALL_TIMEOUT,
            )
            .await;
        if let Err(error) = joined {
            return Err(match error.kind() {
                ErrorKind::Refused => ChannelError::config(format!(
                    "the bot {} cannot join the room {}: invite it",
                    me.user_id, self.room
                ))
                .because(error),
                _ => error,
            });
        }
        let encryption: Result<Value, _> = self
            .call(
                "the room's encryption",
                Method::GET,
                &format!("/rooms/{room}/state/m.room.encryption/"),
                &[],
                None,
                CALL_TIMEOUT,
            )
            .await;
        match encryption {
            Ok(_) => {
                return Err(ChannelError::config(format!(
                    "the room {} is end-to-end encrypted, and the bot holds no keys: it could read \
                 no answer (post the questions in an unencrypted room)",
                    self.room
                )));
            }
            Err(error) if error.kind() == ErrorKind::Refused => {}
            Err(error) => return Err(error),
        }
        let since = match since {
            Some(since) => since,
            None => self.sync(None, Duration::ZERO).await?.next_batch,
        };
        Ok(Ready {
            bot: me.user_id,
            since,
        })
    }

    /// Sends `content` to the room as an `m.room.message` under
    /// transaction `txn` (the same `txn` again is the same event); its id.
    pub(super) async fn send(&self, txn: &str, content: &Value) -> Result<String, ChannelError> {
        #[derive(Deserialize)]
        struct Sent {
            event_id: String,
        }
        let path = format!(
            "/rooms/{}/send/m.room.message/{}",
            encoded(&self.room),
            encoded(txn)
        );
        let sent: Sent = self
            .call("send", Method::PUT, &path, &[], Some(content), CALL_TIMEOUT)
            .await?;
        Ok(sent.event_id)
    }

    /// The room's events after `since`, waiting up to `wait` for one.
    async fn sync(&self, since: Option<&str>, wait: Duration) -> Result<Delivery, ChannelError> {
        let filter = json!({
            "room": {
                "rooms": [self.room],
                "timeline": {"types": ["m.room.message", "m.reaction"], "limit": EVENTS_PER_SYNC},
                "state": {"types": []},
                "ephemeral": {"types": []},
                "account_data": {"types": []},
            },
            "presence": {"types": []},
            "account_data": {"types": []},
        });
        let mut query = vec![
            ("filter", filter.to_string()),
            ("timeout", wait.as_millis().to_string()),
        ];
        if let Some(since) = since {
            query.push(("since", since.to_owned()));
        }
        let synced: Synced = self
            .call(
                "sync",
                Method::GET,
                "/sync",
                &query,
                None,
                wait + CALL_TIMEOUT,
            )
            .await?;
        let timeline = synced
            .rooms
            .join
            .into_iter()
            .find(|(room, _)| *room == self.room)
            .map(|(_, joined)| joined.timeline)
            .unwrap_or_default();
        if timeline.limited && since.is_some() {
            tracing::warn!(
                "matrix: more happened in the room than one sync reads; some may be missed"
            );
        }
        // One event that cannot be read is passed over, logged: it never
        // holds up the rest.
        let events = timeline
            .events
            .into_iter()
            .filter_map(|event| {
                serde_json::from_value(event)
                    .inspect_err(|error| {
                        tracing::warn!(%error, "matrix: an event that cannot be read is passed over");
                    })
                    .ok()
            })
            .collect();
        Ok(Delivery {
            next_batch: synced.next_batch,
            events,
        })
    }
}

/// What a reply of the homeserver says: its body, a wait (429), or why
/// it failed.
fn read<T: DeserializeOwned>(reply: http::Reply) -> Read<T> {
    let status = reply.status;
    if status.is_success() {
        return Read::Done(
            serde_json::from_slice(&reply.body)
                .map_err(|e| ChannelError::down("a reply that cannot be read").because(e)),
        );
    }
    let refusal: Refusal = serde_json::from_slice(&reply.body).unwrap_or_default();
    if status == StatusCode::TOO_MANY_REQUESTS || refusal.errcode == "M_LIMIT_EXCEEDED" {
        return Read::Wait(
            refusal
                .retry_after_ms
                .map(Duration::from_millis)
                .or(reply.retry_after),
        );
    }
    let why = format!("{status} {} {}", refusal.errcode, refusal.error);
    Read::Done(Err(match (status, refusal.errcode.as_str()) {
        (_, "M_UNKNOWN_TOKEN" | "M_MISSING_TOKEN") | (StatusCode::UNAUTHORIZED, _) => {
            ChannelError::config(format!("the homeserver refused the access token: {why}"))
        }
        (status, _) if status.is_server_error() => ChannelError::down(why),
        _ => ChannelError::refused(why),
    }))
}

/// Everything but letters, digits and `-._~`: what is percent-encoded in
/// a path's segment or a query's value (a room id's `!` and `:`, and
/// anything that would leave the segment).
const RESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` as one segment of a path or a query's value.
fn encoded(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, RESERVED).to_string()
}

/// The bot, ready: who it is, and where its reading starts.
pub(super) struct Ready {
    pub bot: String,
    pub since: String,
}

/// The room's events, from where the last delivery ended (`since`), read
/// by `/sync`'s long poll.
pub(super) struct Syncer {
    api: Api,
    since: String,
}

impl Syncer {
    pub(super) fn new(api: Api, since: String) -> Self {
        Syncer { api, since }
    }
}

impl Source for Syncer {
    type Item = Delivery;

    async fn next(mut self) -> (Self, Result<Vec<Delivery>, ChannelError>) {
        match self.api.sync(Some(&self.since), POLL).await {
            Ok(delivery) => {
                self.since.clone_from(&delivery.next_batch);
                (self, Ok(vec![delivery]))
            }
            Err(error) => (self, Err(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_encoded_segment_keeps_nothing_that_leaves_it() {
        assert_eq!(encoded("!abc:example.org"), "%21abc%3Aexample.org");
        assert_eq!(encoded("a/b?c#d e"), "a%2Fb%3Fc%23d%20e");
    }
}
