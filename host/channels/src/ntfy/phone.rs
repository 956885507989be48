//! Setting a phone up for ntfy (`ask-user inbox phone`): a fresh topic
//! nobody can guess, and a test notification whose one button, pressed on
//! the phone, comes back on the reply topic as the answers will.

use std::time::Duration;

use serde_json::json;

use ask_user_inbox::notify::{Backoff, ChannelError, ErrorKind};

use super::stream::Stream;
use crate::driver::Source;
use crate::http;

/// The label of the test notification's button.
pub const TEST_BUTTON: &str = "It works";

/// A new topic's name: `ask-` and 128 random bits in hex. Anyone who
/// knows a topic reads it, so it must not be guessed.
pub fn new_topic() -> Result<String, ChannelError> {
    ask_user_seam::secret::id("ask-")
        .map_err(|e| ChannelError::down("no random topic can be made").because(e))
}

/// A phone's way in and back: the topic it reads and the reply topic its
/// buttons post to, on `server`.
pub struct Phone<'a> {
    /// `https://ntfy.sh`: the server, no trailing `/`.
    pub server: &'a str,
    pub topic: &'a str,
    pub replies: &'a str,
    /// An access token, for a server that wants one.
    pub token: Option<&'a str>,
}

impl Phone<'_> {
    /// Publishes a test notification with one button ([`TEST_BUTTON`]) and
    /// waits, at most `wait`, for its press to come back on the reply
    /// topic. True once pressed, false when `wait` ran out; an error when
    /// the server cannot be reached or refuses.
    pub async fn test(&self, wait: Duration) -> Result<bool, ChannelError> {
        let http = http::client()?;
        let nonce = ask_user_seam::secret::id("test-")
            .map_err(|e| ChannelError::down("no test id can be made").because(e))?;
        // Opened before the test is sent, and from every message the server
        // keeps: a press that comes at once is read too.
        let stream = Stream::new(
            format!("{}/{}/json", self.server, self.replies),
            self.token.map(str::to_owned),
            http.clone(),
            None,
        );
        let message = json!({
            "topic": self.topic,
            "title": "ask-user: is this your phone?",
            "message": "Press the button: the answer goes back the way your answers will.",
            "tags": ["white_check_mark"],
            "actions": [{
                "action": "http",
                "label": TEST_BUTTON,
                "url": format!("{}/{}", self.server, self.replies),
                "method": "POST",
                "body": json!({"test": nonce}).to_string(),
                "clear": true,
            }],
        });
        super::publish(&http, self.server, self.token, &message)
            .await
            .map_err(|e| e.context("the test notification"))?;
        let pressed = async {
            let mut stream = stream;
            let mut backoff = Backoff::new();
            loop {
                let (next, read) = stream.next().await;
                stream = next;
                match read {
                    Ok(messages) if messages.iter().any(|m| m.message.contains(&nonce)) => {
                        return Ok(());
                    }
                    Ok(_) => backoff.reset(),
                    // Opened again (from the last message read) once the
                    // backoff's wait is over.
                    Err(error) if error.kind() == ErrorKind::Down => {
                        tracing::debug!(error = error.report(), "the reply topic's stream");
                        tokio::time::sleep(backoff.failed()).await;
                    }
                    Err(error) => return Err(error.context("the reply topic")),
                }
            }
        };
        match tokio::time::timeout(wait, pressed).await {
            Ok(pressed) => pressed.map(|()| true),
            Err(_) => Ok(false),
        }
    }
}
