//! How every channel calls its service over HTTP: one client, replies read
//! up to a bound, what a status means ([`ErrorKind`]), and a call tried
//! again as long as a 429 says to wait ([`call`]). No error names the
//! address called: it may hold a secret (a bot's token, an ntfy topic, a
//! webhook's path).

use std::time::Duration;

use reqwest::StatusCode;

use ask_user_inbox::notify::ChannelError;

/// The most of a service's reply that is read (a Slack reply or event, a
/// batch of Telegram updates): a service that sends more is taken as
/// down, and nothing of it stays in memory.
pub const MAX_REPLY_BYTES: usize = 4 << 20;

/// How many times a call is tried again after a 429, and the longest wait
/// one is obeyed for (a longer one is cut to it).
const RETRIES: usize = 5;
const MOST_RETRY_AFTER: Duration = Duration::from_secs(60);

/// An HTTP client for a channel (HTTPS through rustls).
pub fn client() -> Result<reqwest::Client, ChannelError> {
    ask_user_inbox::http_client(None)
        .map_err(|e| ChannelError::config("cannot make an HTTP client").because(e))
}

/// What a status other than a success says: a service that is busy (429)
/// or failing (5xx) may take the call later; any other refusal is for
/// good.
pub fn status_error(what: &str, status: StatusCode) -> ChannelError {
    let why = format!("{what}: the server replied {status}");
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        ChannelError::down(why)
    } else {
        ChannelError::refused(why)
    }
}

/// Sends `request` (a notification): a reply that is not a success is
/// down or refused by its status ([`status_error`]).
pub async fn sent(request: reqwest::RequestBuilder) -> Result<(), ChannelError> {
    let response = request.send().await.map_err(unreached)?;
    match response.status() {
        status if status.is_success() => Ok(()),
        status => Err(status_error("a notification", status)),
    }
}

/// A request that got no reply: down, with the error as its cause (its
/// address left out).
pub fn unreached(error: reqwest::Error) -> ChannelError {
    ChannelError::down("no reply").because(error.without_url())
}

/// A reply, read whole (up to [`MAX_REPLY_BYTES`]).
pub struct Reply {
    pub status: StatusCode,
    /// Its `Retry-After`, in seconds, when it has one.
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

/// Sends `request` and reads its reply; a reply longer than
/// [`MAX_REPLY_BYTES`], or cut off, is down.
pub async fn reply(request: reqwest::RequestBuilder) -> Result<Reply, ChannelError> {
    let mut response = request.send().await.map_err(unreached)?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok()?.trim().parse().ok())
        .map(Duration::from_secs);
    let over = || {
        ChannelError::down(format!(
            "a reply of over {} MiB ({status})",
            MAX_REPLY_BYTES >> 20
        ))
    };
    if response
        .content_length()
        .is_some_and(|length| length > MAX_REPLY_BYTES as u64)
    {
        return Err(over());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        ChannelError::down(format!("a reply ({status}) cut off")).because(e.without_url())
    })? {
        if body.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(over());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Reply {
        status,
        retry_after,
        body,
    })
}

/// What a channel read in a reply.
pub enum Read<T> {
    /// What the call gave, or why it failed.
    Done(Result<T, ChannelError>),
    /// The service asks to wait (a 429) this long, or a second when it
    /// does not say: the call is made again.
    Wait(Option<Duration>),
}

/// Calls `method`: makes the request with `request`, and reads its reply
/// with `read`; while the service asks to wait, waits (at most a minute)
/// and calls again, a few times, and then is down. A failure says
/// `method` first.
pub async fn call<T>(
    method: &str,
    mut request: impl FnMut() -> reqwest::RequestBuilder,
    mut read: impl FnMut(Reply) -> Read<T>,
) -> Result<T, ChannelError> {
    let mut retries = 0;
    loop {
        let replied = reply(request()).await.map_err(|e| e.context(method))?;
        match read(replied) {
            Read::Done(done) => return done.map_err(|e| e.context(method)),
            Read::Wait(_) if retries == RETRIES => {
                return Err(ChannelError::down(format!(
                    "{method}: still asked to wait (429) after {RETRIES} tries"
                )));
            }
            Read::Wait(wait) => {
                retries += 1;
                let wait = wait.unwrap_or(Duration::from_secs(1)).min(MOST_RETRY_AFTER);
                tracing::info!(method, ?wait, "the service asks to wait (429)");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// A URL in the config that a channel calls: `http://` or `https://`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(try_from = "toml::Value")]
pub struct HttpUrl(pub String);

impl TryFrom<toml::Value> for HttpUrl {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, String> {
        match value.as_str() {
            Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
                Ok(HttpUrl(url.to_owned()))
            }
            _ => Err(format!("{value} is not an http:// or https:// URL")),
        }
    }
}
