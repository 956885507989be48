//! Setting a phone up for Telegram (`ask-user inbox phone telegram`): the
//! bot's token checked, the chat and the person found by the `/start` with
//! a one-time code they send the bot (a `t.me` link carries it), and a test
//! message whose one button, pressed by that person, comes back as the
//! answers will.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use ask_user_inbox::notify::{Backoff, ChannelError, ErrorKind};

use super::api::{Api, CALL_TIMEOUT, Poller, SentMessage, Update};
use super::{DEFAULT_API, bot_token};
use crate::driver::Source;
use crate::http;
use crate::secret::Secret;

/// The label of the test message's button.
pub const TEST_BUTTON: &str = "It works";

/// A bot, its token checked by Telegram.
pub struct Bot {
    api: Api,
    /// Its `@username`, to send `/start` to.
    pub username: String,
    /// Where its updates are read from: past those read here.
    offset: i64,
}

/// Who sent `/start`, and where.
#[derive(Debug, Clone, Copy)]
pub struct Started {
    /// The chat the questions go to (a person's own chat with the bot, or
    /// a group).
    pub chat: i64,
    /// The person, who may answer.
    pub user: i64,
}

impl Bot {
    /// The bot whose token is `token`, at `api_url` (Telegram's when
    /// `None`), once `getMe` answers. A token of the wrong shape, or one
    /// Telegram refuses, is an error that says so.
    pub async fn new(token: &str, api_url: Option<&str>) -> Result<Bot, ChannelError> {
        let token = token.trim();
        if !bot_token(token) {
            return Err(ChannelError::config(
                "that is not a bot's token (digits, a colon, then letters, digits, - and _): \
                 copy the one @BotFather gave",
            ));
        }
        let api_url = api_url.unwrap_or(DEFAULT_API).trim_end_matches('/');
        let api = Api::new(Secret(format!("{api_url}/bot{token}")), http::client()?);
        #[derive(Deserialize)]
        struct Me {
            username: Option<String>,
        }
        let me: Me = api
            .call("getMe", &json!({}), CALL_TIMEOUT)
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::Refused => {
                    ChannelError::config("Telegram refused the token: is it the bot's, whole?")
                        .because(e)
                }
                _ => e,
            })?;
        Ok(Bot {
            api,
            username: me.username.unwrap_or_default(),
            offset: 0,
        })
    }

    /// The next updates (up to a long poll's wait), read past; Telegram
    /// unreachable is tried again after a [`Backoff`].
    async fn updates(&mut self) -> Result<Vec<Update>, ChannelError> {
        let mut backoff = Backoff::new();
        loop {
            let poller = Poller {
                api: self.api.clone(),
                offset: self.offset,
            };
            let (poller, updates) = poller.next().await;
            self.offset = poller.offset;
            match updates {
                Err(error) if error.kind() == ErrorKind::Down => {
                    tracing::debug!(error = error.report(), "telegram: getUpdates");
                    tokio::time::sleep(backoff.failed()).await;
                }
                updates => return updates,
            }
        }
    }

    /// A code for [`started`](Self::started): 64 random bits in hex, what
    /// a `t.me` link's `start` may carry.
    pub fn new_code() -> Result<String, ChannelError> {
        let token = ask_user_seam::secret::token()
            .map_err(|e| ChannelError::down("no code can be made").because(e))?;
        Ok(token[..16].to_owned())
    }

    /// The link that opens the bot and sends it `/start code` (Telegram's
    /// deep link).
    pub fn link(&self, code: &str) -> String {
        format!("https://t.me/{}?start={code}", self.username)
    }

    /// Waits, at most `wait`, for someone to send the bot `/start code`:
    /// where, and who. Anyone can message a bot, so a `/start` without the
    /// code (which only the person at this terminal has) counts for
    /// nothing. `None` when nobody sent it.
    pub async fn started(
        &mut self,
        code: &str,
        wait: Duration,
    ) -> Result<Option<Started>, ChannelError> {
        let expected = format!("/start {code}");
        let started = async {
            loop {
                for update in self.updates().await? {
                    let Some(message) = update.message else {
                        continue;
                    };
                    let start = message.text.as_deref().map(str::trim);
                    if let (Some(from), Some(text)) = (&message.from, start)
                        && text == expected
                    {
                        return Ok::<_, ChannelError>(Started {
                            chat: message.chat.id,
                            user: from.id,
                        });
                    }
                }
            }
        };
        match tokio::time::timeout(wait, started).await {
            Ok(started) => started.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Sends `started`'s chat a test message with one button, and waits,
    /// at most `wait`, for that person to press it. True once pressed.
    pub async fn test(&mut self, started: Started, wait: Duration) -> Result<bool, ChannelError> {
        let nonce = ask_user_seam::secret::id("test-")
            .map_err(|e| ChannelError::down("no test id can be made").because(e))?;
        let message = json!({
            "chat_id": started.chat,
            "text": "ask-user: press the button, and the answer comes back the way your answers will.",
            "reply_markup": {"inline_keyboard": [[{"text": TEST_BUTTON, "callback_data": nonce}]]},
        });
        let sent: SentMessage = self.api.call("sendMessage", &message, CALL_TIMEOUT).await?;
        let pressed = async {
            loop {
                for update in self.updates().await? {
                    let Some(query) = update.callback_query else {
                        continue;
                    };
                    let ours = query.data.as_deref() == Some(nonce.as_str())
                        && query.from.id == started.user;
                    let text = match ours {
                        true => "It works.",
                        false => "Not this one.",
                    };
                    let told = json!({"callback_query_id": query.id, "text": text});
                    let _ = self
                        .api
                        .call::<bool>("answerCallbackQuery", &told, CALL_TIMEOUT)
                        .await;
                    if ours {
                        let done = json!({
                            "chat_id": started.chat,
                            "message_id": sent.message_id,
                            "text": "ask-user: it works. Questions will come here.",
                        });
                        let _ = self
                            .api
                            .call::<serde_json::Value>("editMessageText", &done, CALL_TIMEOUT)
                            .await;
                        return Ok::<_, ChannelError>(());
                    }
                }
            }
        };
        match tokio::time::timeout(wait, pressed).await {
            Ok(pressed) => pressed.map(|()| true),
            Err(_) => Ok(false),
        }
    }
}
