//! The reply topic's JSON stream, read as a channel's source.

use std::time::Duration;

use serde::Deserialize;

use ask_user_inbox::notify::ChannelError;

use crate::driver::Source;
use crate::http;

/// How long the reply stream may stay silent (ntfy sends a keepalive every
/// 45 s) before it is taken for dead and opened again.
const SILENCE: Duration = Duration::from_secs(120);

/// The reply stream: the connection (once open), what was read of its
/// current line, and the last message read.
pub(super) struct Stream {
    url: String,
    token: Option<String>,
    http: reqwest::Client,
    response: Option<reqwest::Response>,
    line: Vec<u8>,
    since: Option<String>,
}

impl Stream {
    /// The stream at `url`, read with `token` from after message `since`
    /// (every message the server keeps, without one); opened when first
    /// read.
    pub(super) fn new(
        url: String,
        token: Option<String>,
        http: reqwest::Client,
        since: Option<String>,
    ) -> Self {
        Stream {
            url,
            token,
            http,
            response: None,
            line: Vec::new(),
            since,
        }
    }
}

/// A message of the reply topic.
#[derive(Debug, Deserialize)]
pub(super) struct Message {
    pub id: String,
    event: String,
    #[serde(default)]
    pub message: String,
}

impl Source for Stream {
    type Item = Message;

    /// The next messages of the reply topic (opening the stream first, after
    /// the last one read); an error when it cannot be opened, ends or falls
    /// silent.
    async fn next(mut self) -> (Self, Result<Vec<Message>, ChannelError>) {
        if self.response.is_none() {
            // After the last reply read; at the first start, every reply the
            // server keeps (one sent while the inbox was starting counts; an
            // older one signs for nothing posted now). A message id is
            // letters and digits: nothing to escape.
            let since = self
                .since
                .as_deref()
                .filter(|since| since.bytes().all(|b| b.is_ascii_alphanumeric()))
                .unwrap_or("all");
            let url = format!("{}?since={since}", self.url);
            let mut request = self.http.get(url);
            if let Some(token) = &self.token {
                request = request.bearer_auth(token);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => self.response = Some(response),
                Ok(response) => {
                    let error = http::status_error("the reply topic's stream", response.status());
                    return (self, Err(error));
                }
                Err(error) => {
                    let error = http::unreached(error).context("the reply topic's stream");
                    return (self, Err(error));
                }
            }
        }
        loop {
            let Some(response) = self.response.as_mut() else {
                let error = ChannelError::down("the reply topic's stream is closed");
                return (self, Err(error));
            };
            let read = tokio::time::timeout(SILENCE, response.chunk()).await;
            let chunk = match read {
                Ok(Ok(Some(chunk))) => chunk,
                ended => {
                    let error = match ended {
                        Ok(Err(error)) => {
                            http::unreached(error).context("the reply topic's stream")
                        }
                        Err(_) => ChannelError::down("the reply topic's stream fell silent"),
                        _ => ChannelError::down("the reply topic's stream ended"),
                    };
                    self.response = None;
                    self.line.clear();
                    return (self, Err(error));
                }
            };
            let mut messages = Vec::new();
            for byte in chunk {
                if byte != b'\n' {
                    // One message is a few hundred bytes; a line past 64 KiB
                    // is no message of ours.
                    if self.line.len() < 64 << 10 {
                        self.line.push(byte);
                    }
                    continue;
                }
                if let Ok(message) = serde_json::from_slice::<Message>(&self.line)
                    && message.event == "message"
                {
                    self.since = Some(message.id.clone());
                    messages.push(message);
                }
                self.line.clear();
            }
            if !messages.is_empty() {
                return (self, Ok(messages));
            }
        }
    }
}
