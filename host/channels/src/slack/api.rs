//! Slack's Web API as the channel calls it (a method's reply read, a 429
//! waited out) and its Socket Mode connection, read as the channel's
//! source.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as Frame;

use ask_user_inbox::notify::ChannelError;

use super::events::{Envelope, Interaction, Opened};
use crate::driver::Source;
use crate::http::{self, Read};
use crate::secret::Secret;

/// How long a Web API call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the socket may stay silent (Slack pings it) before it is taken
/// for dead and opened again.
const SILENCE: Duration = Duration::from_secs(120);

/// What a reply of the Web API says: its body, a wait (429), or why it
/// failed.
fn read<T: DeserializeOwned>(reply: http::Reply) -> Read<T> {
    let status = reply.status;
    if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        return Read::Wait(reply.retry_after);
    }
    if status.is_server_error() {
        return Read::Done(Err(http::status_error("Slack", status)));
    }
    let Ok(body) = serde_json::from_slice::<Value>(&reply.body) else {
        return Read::Done(Err(ChannelError::down(format!(
            "Slack replied {status}, not JSON"
        ))));
    };
    Read::Done(match (body["ok"].as_bool(), body["error"].as_str()) {
        (Some(true), _) => serde_json::from_value(body)
            .map_err(|e| ChannelError::down("a reply that cannot be read").because(e)),
        (_, Some("ratelimited" | "internal_error" | "fatal_error" | "service_unavailable")) => {
            Err(ChannelError::down(body["error"].to_string()))
        }
        (_, error) => Err(ChannelError::refused(error.unwrap_or("not ok"))),
    })
}

#[derive(Debug, Clone)]
pub(super) struct Api {
    base: String,
    /// The Web API is `https://`: the socket must be `wss://`.
    secure: bool,
    app: Secret,
    bot: Secret,
    http: reqwest::Client,
}

impl Api {
    pub(super) fn new(
        base: String,
        secure: bool,
        app: Secret,
        bot: Secret,
        http: reqwest::Client,
    ) -> Self {
        Api {
            base,
            secure,
            app,
            bot,
            http,
        }
    }

    /// Calls `method` with `body` as the bot (or, with `app`, as the app),
    /// waiting out 429s (a few times).
    pub(super) async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        body: &Value,
        app: bool,
    ) -> Result<T, ChannelError> {
        let token = if app { &self.app } else { &self.bot };
        let request = || {
            self.http
                .post(format!("{}/{method}", self.base))
                .bearer_auth(&token.0)
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/json; charset=utf-8",
                )
                .body(body.to_string())
                .timeout(CALL_TIMEOUT)
        };
        http::call(method, request, read).await
    }

    /// Opens a Socket Mode connection: its URL from `apps.connections.open`,
    /// then the WebSocket (over TLS, unless the Web API is plain HTTP, as a
    /// test's is).
    async fn connect(&self) -> Result<Ws, ChannelError> {
        let Opened { url } = self.call("apps.connections.open", &json!({}), true).await?;
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| ChannelError::down("apps.connections.open gave no URL"))?;
        if scheme != if self.secure { "wss" } else { "ws" } {
            return Err(ChannelError::refused(format!(
                "apps.connections.open gave a {scheme}:// URL, not {}",
                if self.secure { "wss://" } else { "ws://" }
            )));
        }
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse()
                    .map_err(|_| ChannelError::down("apps.connections.open gave a bad port"))?,
            ),
            None => (authority, if self.secure { 443 } else { 80 }),
        };
        // The URL holds a ticket: no error says it.
        let down = |what: &str, e: &dyn std::fmt::Display| {
            ChannelError::down(format!("Slack's socket: {what}: {e}"))
        };
        let tcp = tokio::time::timeout(CALL_TIMEOUT, TcpStream::connect((host, port)))
            .await
            .map_err(|e| down("connect", &e))?
            .map_err(|e| down("connect", &e))?;
        let stream = match self.secure {
            false => tokio_util::either::Either::Left(tcp),
            true => {
                use rustls_platform_verifier::ConfigVerifierExt;
                let config =
                    rustls::ClientConfig::with_platform_verifier().map_err(|e| down("TLS", &e))?;
                let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|e| down("TLS", &e))?;
                let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                    .connect(name, tcp)
                    .await
                    .map_err(|e| down("TLS", &e))?;
                tokio_util::either::Either::Right(tls)
            }
        };
        // An event is read up to the same bound as a reply: a bigger one
        // ends the connection, and a new one is opened.
        let bounded = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(http::MAX_REPLY_BYTES))
            .max_frame_size(Some(http::MAX_REPLY_BYTES));
        let (ws, _) = tokio::time::timeout(
            CALL_TIMEOUT,
            tokio_tungstenite::client_async_with_config(url.as_str(), stream, Some(bounded)),
        )
        .await
        .map_err(|e| down("handshake", &e))?
        .map_err(|e| down("handshake", &e))?;
        Ok(ws)
    }
}

type Ws = WebSocketStream<
    tokio_util::either::Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>,
>;

/// The Socket Mode connection, opened when first read.
pub(super) struct Socket {
    api: Api,
    ws: Option<Ws>,
}

impl Socket {
    pub(super) fn new(api: Api) -> Self {
        Socket { api, ws: None }
    }
}

impl Source for Socket {
    type Item = Interaction;

    /// The next interaction, its envelope acknowledged; the socket is
    /// opened (again) as needed.
    async fn next(mut self) -> (Self, Result<Vec<Interaction>, ChannelError>) {
        loop {
            let ws = match self.ws.as_mut() {
                Some(ws) => ws,
                None => match self.api.connect().await {
                    Ok(ws) => self.ws.insert(ws),
                    Err(error) => return (self, Err(error)),
                },
            };
            let frame = match tokio::time::timeout(SILENCE, ws.next()).await {
                Ok(Some(Ok(frame))) => frame,
                ended => {
                    let error = match ended {
                        Ok(Some(Err(error))) => ChannelError::down("Slack's socket").because(error),
                        Err(_) => ChannelError::down("Slack's socket fell silent"),
                        _ => ChannelError::down("Slack's socket closed"),
                    };
                    self.ws = None;
                    return (self, Err(error));
                }
            };
            let Frame::Text(text) = frame else {
                // Pings are answered by the socket itself.
                continue;
            };
            let envelope = match serde_json::from_str::<Envelope>(&text) {
                Ok(envelope) => envelope,
                Err(error) => {
                    tracing::warn!(%error, "slack: a frame that is no envelope is passed over");
                    continue;
                }
            };
            if envelope.kind == "disconnect" {
                // Slack moves the connection: a new one is opened.
                tracing::debug!(reason = ?envelope.reason, "slack: the socket is opened again");
                self.ws = None;
                continue;
            }
            let Some(id) = envelope.envelope_id else {
                continue;
            };
            let ack = json!({"envelope_id": id}).to_string();
            if let Err(error) = ws.send(Frame::text(ack)).await {
                self.ws = None;
                return (
                    self,
                    Err(ChannelError::down("Slack's socket").because(error)),
                );
            }
            // Acknowledged, whatever it holds: one that cannot be read is
            // passed over, and never holds up the rest.
            let Some(payload) = envelope.payload else {
                continue;
            };
            match serde_json::from_value::<Interaction>(payload) {
                Ok(Interaction::Other) => continue,
                Ok(interaction) => return (self, Ok(vec![interaction])),
                Err(error) => {
                    tracing::warn!(%error, kind = envelope.kind, "slack: an interaction that cannot be read is passed over");
                }
            }
        }
    }
}
