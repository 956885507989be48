//! The web answerer: a page served on loopback where the human answers.
//!
//! `GET /?token=…` serves the page; `GET /events?token=…` is a server-sent
//! event stream of the frames of [`super::remote`] (`ready`, then every
//! pending `waterfall`, then new ones and `cancel`s as they happen);
//! `POST /answer` (token in the `x-ask-user-token` header) takes
//! `{"eventId":…,"outcome":…}`. The first outcome for an event wins; a second
//! or late one gets 409 and changes nothing.
//!
//! It claims a request when at least one page is connected. With none, it
//! waits up to its grace period for one, then passes the request on. When
//! every page leaves while a request is claimed and none is back within the
//! grace period, the question is withdrawn from the pages and passed on too
//! (a reload, or a phone that reconnects, keeps it).
//!
//! Security: every request needs the per-run random token (401 without); the
//! Host header must name this server and an Origin header, when sent, must be
//! this server's (403 otherwise, against DNS rebinding and cross-site posts);
//! bodies are limited to [`MAX_BODY_BYTES`]; connections are bounded in
//! number and time ([`crate::serve`]); the page shows everything from the
//! model as text, never as HTML, and runs only its own script (a fresh CSP
//! nonce per response). Answers that do not fit the question are refused
//! when posted (422, with the reason), so the page keeps the card. It binds
//! loopback unless told otherwise.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use ask_user_seam::remote::{self, Outcome, PendingQuestions, Unsettled, UpFrame};
use ask_user_seam::{AnswerFuture, Answerer, Ask, Next};

use super::{AnswererKind, ConfigProblem, KindTable, Setup, Started};
use crate::serve::{Serving, client_host};

/// The largest answer body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// Frames a page's stream may fall behind by. A page further behind has
/// missed some: its stream is ended, and it reconnects to what is pending.
pub const FRAME_BACKLOG: usize = 256;

const PAGE: &str = include_str!("page.html");

/// Where and how the web answerer serves.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// The address to bind. Default: 127.0.0.1 (loopback only).
    pub bind: IpAddr,
    /// The port; 0 picks any free one. Default 0.
    pub port: u16,
    /// How long a request waits for a page to connect before it is passed
    /// on; `None` waits as long as it takes. Default 3 s.
    pub grace: Option<Duration>,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            grace: Some(Duration::from_secs(3)),
        }
    }
}

/// Answers through pages in a browser.
pub struct WebAnswerer {
    shared: Arc<Shared>,
    address: SocketAddr,
    serving: tokio::sync::Mutex<Serving>,
}

struct Shared {
    token: String,
    /// The port the Host header must name.
    port: u16,
    pending: PendingQuestions,
    frames: broadcast::Sender<Value>,
    pages: AtomicUsize,
    page_connected: Notify,
    last_page_left: Notify,
    events: AtomicU64,
    grace: Option<Duration>,
    /// Ends the pages' streams when the answerer closes.
    closing: CancellationToken,
}

impl WebAnswerer {
    /// Binds and starts serving.
    pub async fn start(config: WebConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind((config.bind, config.port))
            .await
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "the web answerer cannot listen on {}:{}: {e}",
                        config.bind, config.port
                    ),
                )
            })?;
        let address = listener.local_addr()?;
        let frames = broadcast::channel(FRAME_BACKLOG).0;
        let withdrawn = frames.clone();
        let shared = Arc::new(Shared {
            token: crate::secret::token()?,
            port: address.port(),
            // A question that leaves (answered, withdrawn) leaves every page.
            pending: PendingQuestions::new("w", move |id| {
                let _ = withdrawn.send(cancel(id, "withdrawn"));
            }),
            frames,
            pages: AtomicUsize::new(0),
            page_connected: Notify::new(),
            last_page_left: Notify::new(),
            events: AtomicU64::new(1),
            grace: config.grace,
            closing: CancellationToken::new(),
        });
        let app = Router::new()
            .route("/", get(page))
            .route("/events", get(events))
            .route("/answer", post(answer))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(shared.clone());
        Ok(WebAnswerer {
            shared,
            address,
            serving: tokio::sync::Mutex::new(Serving::start(listener, app)),
        })
    }

    /// The address served.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The page's address, token included: what the human opens.
    pub fn url(&self) -> String {
        format!(
            "http://{}:{}/?token={}",
            client_host(self.address),
            self.address.port(),
            self.shared.token
        )
    }

    /// Questions (batches) waiting for an answer from a page now.
    pub fn pending(&self) -> usize {
        self.shared.pending.len()
    }

    /// Pages connected now.
    pub fn pages(&self) -> usize {
        self.shared.pages.load(Ordering::SeqCst)
    }
}

impl Shared {
    /// Waits for a page within the grace period; whether one is connected.
    async fn page_present(&self) -> bool {
        let deadline = self.grace.map(|grace| tokio::time::Instant::now() + grace);
        loop {
            let connected = self.page_connected.notified();
            if self.pages.load(Ordering::SeqCst) > 0 {
                return true;
            }
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, connected).await.is_err() {
                        return self.pages.load(Ordering::SeqCst) > 0;
                    }
                }
                None => connected.await,
            }
        }
    }

    /// Resolves once no page has been connected for the grace period
    /// (a reload is not leaving); never, when the grace is unbounded.
    async fn abandoned(&self) {
        loop {
            let left = self.last_page_left.notified();
            if self.pages.load(Ordering::SeqCst) > 0 {
                left.await;
            } else if !self.page_present().await {
                return;
            }
        }
    }

    /// Whether a Host header may name this server: `localhost` or an IP
    /// address, with its port. A domain name could be rebound to this
    /// address by a hostile page (DNS rebinding); an IP literal cannot, so
    /// a server bound beyond loopback is reachable under its own addresses.
    fn names_this_server(&self, host: &str) -> bool {
        match host.strip_prefix("localhost:") {
            Some(port) => port.parse() == Ok(self.port),
            None => host
                .parse::<SocketAddr>()
                .is_ok_and(|address| address.port() == self.port),
        }
    }

    fn check(&self, headers: &HeaderMap, token: Option<&str>) -> Result<(), StatusCode> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if !self.names_this_server(host) {
            return Err(StatusCode::FORBIDDEN);
        }
        let origin = headers
            .get(header::ORIGIN)
            .map(|o| o.to_str().unwrap_or_default());
        if origin.is_some_and(|origin| origin != format!("http://{host}")) {
            return Err(StatusCode::FORBIDDEN);
        }
        if crate::secret::same(token.unwrap_or_default().as_bytes(), self.token.as_bytes()) {
            Ok(())
        } else {
            Err(StatusCode::UNAUTHORIZED)
        }
    }
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// A request that passed the checks: a Host naming this server, no foreign
/// Origin, and the token (from the `x-ask-user-token` header, or the `token`
/// query parameter where a browser cannot set headers). Every route takes it.
struct Authorized;

impl FromRequestParts<Arc<Shared>> for Authorized {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, shared: &Arc<Shared>) -> Result<Self, Response> {
        let query = Query::<TokenQuery>::try_from_uri(&parts.uri).ok();
        let token = match parts.headers.get("x-ask-user-token") {
            Some(token) => token.to_str().ok(),
            None => query.as_ref().and_then(|q| q.token.as_deref()),
        };
        shared
            .check(&parts.headers, token)
            .map(|()| Authorized)
            .map_err(refusal)
    }
}

/// The page, its script and style allowed by a nonce fresh for each
/// response: nothing inline but them runs or applies.
async fn page(_: Authorized) -> Response {
    let Ok(nonce) = crate::secret::token() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let policy = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; base-uri 'none'; form-action 'none'"
    );
    let page = PAGE
        .replacen("<script>", &format!("<script nonce=\"{nonce}\">"), 1)
        .replacen("<style>", &format!("<style nonce=\"{nonce}\">"), 1);
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8".to_owned()),
            (header::CONTENT_SECURITY_POLICY, policy),
            (header::REFERRER_POLICY, "no-referrer".to_owned()),
            (header::X_FRAME_OPTIONS, "DENY".to_owned()),
        ],
        Html(page),
    )
        .into_response()
}

/// Counts a page as connected while its stream lives.
struct PageGuard(Arc<Shared>);

impl Drop for PageGuard {
    fn drop(&mut self) {
        if self.0.pages.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.last_page_left.notify_waiters();
        }
    }
}

async fn events(_: Authorized, State(shared): State<Arc<Shared>>) -> Response {
    // Subscribe before reading what is pending, so nothing falls between.
    let live = shared.frames.subscribe();
    let client = format!("page-{}", shared.events.fetch_add(1, Ordering::Relaxed));
    let mut first = vec![remote::ready(&client)];
    first.extend(shared.pending.frames());
    shared.pages.fetch_add(1, Ordering::SeqCst);
    shared.page_connected.notify_waiters();
    let guard = PageGuard(shared.clone());
    let live = stream::unfold((live, guard), |(mut live, guard)| async move {
        // On lag (a page too slow to keep up has missed frames) or close,
        // the stream ends, and the page reconnects to what is pending now.
        let frame = live.recv().await.ok()?;
        Some((frame, (live, guard)))
    })
    .take_until(shared.closing.clone().cancelled_owned());
    let frames: std::pin::Pin<Box<dyn Stream<Item = Value> + Send>> =
        Box::pin(stream::iter(first).chain(live));
    Sse::new(
        frames.map(|frame| {
            Ok::<_, std::convert::Infallible>(Event::default().data(frame.to_string()))
        }),
    )
    .keep_alive(KeepAlive::default())
    .into_response()
}

async fn answer(
    _: Authorized,
    State(shared): State<Arc<Shared>>,
    body: axum::body::Bytes,
) -> Response {
    let frame: UpFrame = match serde_json::from_slice(&body) {
        Ok(frame) => frame,
        Err(error) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not an outcome frame: {error}"),
            )
                .into_response();
        }
    };
    // Answers that do not fit are refused with the reason while the
    // question stays open: the page keeps the card, and the human's work.
    match shared
        .pending
        .settle_checked(&frame.event_id, frame.outcome)
    {
        Ok(()) => {
            // Every other page drops the card.
            let _ = shared.frames.send(cancel(&frame.event_id, "answered"));
            StatusCode::OK.into_response()
        }
        Err(Unsettled::Misfit(error)) => {
            (StatusCode::UNPROCESSABLE_ENTITY, error.message().to_owned()).into_response()
        }
        Err(Unsettled::NotPending) => (
            StatusCode::CONFLICT,
            "this question was already answered or withdrawn",
        )
            .into_response(),
    }
}

/// A `cancel` frame (SPEC §5) with why the question left, so that a page
/// can say it: `answered` (in another window) or `withdrawn` (the agent
/// stopped waiting).
fn cancel(event_id: &str, reason: &str) -> Value {
    let mut frame = remote::cancel(event_id);
    frame["reason"] = reason.into();
    frame
}

fn refusal(status: StatusCode) -> Response {
    let why = match status {
        StatusCode::UNAUTHORIZED => "open the address ask-user printed: it carries the token",
        _ => "this server answers only its own page on its own address",
    };
    (status, why).into_response()
}

impl Answerer for WebAnswerer {
    fn name(&self) -> &str {
        "web"
    }

    /// Ends the pages' streams and stops serving; an answer posted at this
    /// moment still gets its reply (409: the question is gone).
    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.shared.closing.cancel();
            self.serving.lock().await.stop().await;
        })
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let shared = &self.shared;
            if !shared.page_present().await {
                return next.run().await;
            }
            // The page's list never closes, so a question always opens.
            let Ok(mut pending) = shared.pending.open(ask) else {
                return next.run().await;
            };
            let _ = shared.frames.send(pending.frame().clone());
            let outcome = tokio::select! {
                settled = pending.settled() => settled.and_then(Result::ok),
                // Every page left and none came back within the grace period.
                () = shared.abandoned() => None,
            };
            // Withdrawn from the pages, unless a page settled it.
            drop(pending);
            match outcome.and_then(Outcome::into_answers) {
                Some(answered) => answered,
                None => next.run().await,
            }
        })
    }
}

/// `kind = "web"`: optional `bind`, `port` and `grace` (`"forever"` waits).
pub struct WebKind;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebTable {
    bind: Option<IpAddr>,
    port: Option<u16>,
    grace: Option<String>,
}

impl AnswererKind for WebKind {
    fn name(&self) -> &'static str {
        "web"
    }

    fn configure(
        &self,
        table: KindTable<'_>,
        _base: &Path,
    ) -> Result<Box<dyn Setup>, ConfigProblem> {
        let table: WebTable = table.read(self.name())?;
        let defaults = WebConfig::default();
        Ok(Box::new(WebConfig {
            bind: table.bind.unwrap_or(defaults.bind),
            port: table.port.unwrap_or(defaults.port),
            grace: match table.grace.as_deref() {
                None => defaults.grace,
                Some("forever") => None,
                Some(grace) => Some(crate::config::duration(grace)?),
            },
        }))
    }
}

impl Setup for WebConfig {
    fn start(
        self: Box<Self>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Started>> + Send>> {
        Box::pin(async move {
            let exposed = !self.bind.is_loopback();
            let web = WebAnswerer::start(*self).await?;
            let mut notice = format!("answer in your browser: {}", web.url());
            if exposed {
                notice = format!(
                    "WARNING: the web answerer listens on {}, beyond this machine; anyone who \
                     can reach it and has the address below can answer for you. {notice}",
                    web.address()
                );
            }
            Ok(Started {
                page: Some(web.url()),
                answerer: Arc::new(web),
                notice: Some(notice),
            })
        })
    }
}
