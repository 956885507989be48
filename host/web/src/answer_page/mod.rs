//! The answer page: the HTML page where a human answers, its event stream
//! and its answer endpoint, served for a [`Desk`], the questions behind it
//! (the web answerer's own, or every session's in the inbox).
//!
//! `GET /?token=…` serves the page; `GET /events?token=…` is a server-sent
//! event stream of the frames of [`ask_user_seam::remote`] (`ready`, then
//! every pending `waterfall`, then new ones and `cancel`s as they happen);
//! `POST /answer` (token in the `x-ask-user-token` header) takes
//! `{"eventId":…,"outcome":…}`. The first outcome for an event wins; a second
//! or late one gets 409 and changes nothing; answers that do not fit the
//! question get 422 with the reason, and the question stays open.
//!
//! Who may use a page is its desk's to say ([`Desk::admit`]): one person's
//! page is guarded by a [`Gate`]: every request needs the desk's random
//! token (401 without), in a header, the query, or the cookie a one-time
//! link sets (`GET /?ticket=…`: the link works once, so a copy of it in a
//! notification's history or a browser's is worth nothing after); the Host
//! header must name this server and an Origin header, when sent, must be
//! this server's (403 otherwise, against DNS rebinding and cross-site
//! posts). A team's inbox admits signed-in people instead, and each sees
//! the questions the desk [`shows`](Desk::shows) them. The page shows
//! everything from the model as text, never as HTML, and runs only its own
//! script (a fresh CSP nonce per response).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream::{self, Stream, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::refusal::refusal;
use ask_user_seam::remote::{self, Outcome, Unsettled, UpFrame};

const PAGE: &str = include_str!("page.html");

/// Frames a page's stream may fall behind by. A page further behind has
/// missed some: its stream is ended, and it reconnects to what is pending.
pub const FRAME_BACKLOG: usize = 256;

/// The largest body a page may post, in bytes: the largest answer set the
/// tool takes ([`ask_user_seam::limits::MAX_ANSWERS_JSON_BYTES`]), and the
/// frame around it.
pub const MAX_BODY_BYTES: usize = ask_user_seam::limits::MAX_ANSWERS_JSON_BYTES + 4096;

/// What a page's live stream carries.
#[derive(Debug, Clone)]
pub enum PageFrame {
    /// A frame for the pages whose viewer may see it.
    Show(Shown),
    /// Frames may have been missed: every page's stream ends, and each
    /// reconnects to what is pending then.
    Reconnect,
}

/// A frame of the bridge protocol (SPEC §5: a question's `waterfall`, its
/// `cancel`) or the desk's own (`presence`), and who may see it.
#[derive(Debug, Clone)]
pub struct Shown {
    /// What the page receives.
    pub frame: Value,
    /// Who may see it: an access decision, never read out of `frame`.
    pub audience: Audience,
}

impl Shown {
    /// `frame`, for every viewer.
    pub fn to_everyone(frame: Value) -> Shown {
        Shown {
            frame,
            audience: Audience::default(),
        }
    }
}

/// A question's audience: the groups a person must share one of to see
/// and answer it. None: everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audience(pub Vec<String>);

/// The questions behind an answer page, and who may answer them.
pub trait Desk: Send + Sync + 'static {
    /// Who a page's request comes from: nobody in particular for one
    /// person's page (its token is the whole check), a signed-in person for
    /// a team's.
    type Viewer: Send + Sync + 'static;

    /// Who the request `parts` comes from, or its refusal (401, 403).
    fn admit(&self, parts: &Parts) -> impl Future<Output = Result<Self::Viewer, Response>> + Send;

    /// What a browser gets at `/`: the page ([`page_html`]) once admitted;
    /// before, a one-time link's redirect, a sign-in form, or a refusal.
    fn front(&self, parts: Parts) -> impl Future<Output = Response> + Send;

    /// The name a page says it is signed in as, if any.
    fn signed_in(&self, _viewer: &Self::Viewer) -> Option<String> {
        None
    }

    /// Whether `viewer` may see a frame for `audience` (a question, its
    /// `cancel`, its agent's presence).
    fn shows(&self, _viewer: &Self::Viewer, _audience: &Audience) -> bool {
        true
    }

    /// The live frames: new questions and `cancel`s. A page subscribes
    /// before it reads [`pending_frames`](Self::pending_frames), so nothing
    /// falls between.
    fn subscribe(&self) -> broadcast::Receiver<PageFrame>;

    /// The `waterfall` frames of the questions open now (each page sees
    /// those it [`shows`](Self::shows)).
    fn pending_frames(&self) -> impl Future<Output = Vec<Shown>> + Send;

    /// A page's stream opened; the returned guard is dropped when it ends.
    fn page_opened(self: Arc<Self>) -> Box<dyn Send + Sync>;

    /// Fires when the desk closes: every page's stream ends.
    fn closing(&self) -> CancellationToken;

    /// Whether its server may come back once it closed (an inbox that
    /// restarts): its pages keep trying to reconnect. A page whose server
    /// serves one run (`ask --web`) is told, as its stream's last frame,
    /// that nothing more will come, and stops trying.
    fn comes_back(&self) -> bool {
        true
    }

    /// Settles question `event_id` with `viewer`'s `outcome`, first outcome
    /// wins; answers that do not fit leave it open.
    fn settle(
        &self,
        viewer: &Self::Viewer,
        event_id: &str,
        outcome: Outcome,
    ) -> impl Future<Output = Result<(), Unsettled>> + Send;
}

/// The routes of the page for `desk`.
pub fn routes<D: Desk>(desk: Arc<D>) -> Router {
    Router::new()
        .route("/", get(front::<D>))
        .route("/events", get(events::<D>))
        .route("/answer", post(answer::<D>))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(desk)
}

async fn front<D: Desk>(State(desk): State<Arc<D>>, parts: Parts) -> Response {
    desk.front(parts).await
}

/// How long a one-time link stays good when nobody opens it.
pub const TICKET_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// One-time links not yet used, at most: the oldest goes first past it.
const MAX_TICKETS: usize = 1024;

/// The checks every request passes: a Host naming this server, no foreign
/// Origin, and the token.
pub struct Gate {
    token: String,
    /// The port the Host header must name.
    port: u16,
    /// One-time links not used yet, and when each was made.
    tickets: Mutex<HashMap<String, Instant>>,
    /// How a person gets in, said to a browser that came without a way in.
    opened_by: &'static str,
}

impl Gate {
    pub fn new(token: String, port: u16) -> Self {
        Gate {
            token,
            port,
            tickets: Mutex::new(HashMap::new()),
            opened_by: "Open the address ask-user printed when it started: it carries the \
                        way in.",
        }
    }

    /// Says `how` a person gets in (a sentence), to a browser that came
    /// without a way in or with a link used already.
    pub fn opened_by(mut self, how: &'static str) -> Self {
        self.opened_by = how;
        self
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// A new one-time link to the page at `address` (`http://host:port`):
    /// opened once within [`TICKET_LIFETIME`], it lets that browser in, and
    /// is worth nothing after.
    pub fn ticket(&self, address: &str) -> std::io::Result<String> {
        let ticket = ask_user_seam::secret::token()?;
        let mut tickets = self.tickets();
        tickets.retain(|_, made| made.elapsed() < TICKET_LIFETIME);
        if tickets.len() >= MAX_TICKETS
            && let Some(oldest) = tickets
                .iter()
                .min_by_key(|(_, made)| **made)
                .map(|(t, _)| t.clone())
        {
            tickets.remove(&oldest);
        }
        tickets.insert(ticket.clone(), Instant::now());
        Ok(format!("{address}/?ticket={ticket}"))
    }

    /// Uses up `ticket`; whether it was good.
    fn redeem(&self, ticket: &str) -> bool {
        let mut tickets = self.tickets();
        let found = tickets
            .keys()
            .find(|t| ask_user_seam::secret::same(t.as_bytes(), ticket.as_bytes()))
            .cloned();
        found
            .and_then(|t| tickets.remove(&t))
            .is_some_and(|made| made.elapsed() < TICKET_LIFETIME)
    }

    fn tickets(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.tickets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cookie a one-time link sets; named for the port, since a
    /// browser sends a 127.0.0.1 cookie to every port of it.
    fn cookie(&self) -> String {
        format!("ask-user-{}", self.port)
    }

    /// Whether a Host header may name this server: `localhost` or an IP
    /// address, with its port. A domain name could be rebound to this
    /// address by a hostile page (DNS rebinding); an IP literal cannot, so
    /// a server bound beyond loopback is reachable under its own addresses.
    fn names_this_server(&self, host: &str) -> bool {
        match host.strip_prefix("localhost:") {
            Some(port) => port.parse() == Ok(self.port),
            None => host
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|address| address.port() == self.port),
        }
    }

    /// The Host and Origin checks.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), StatusCode> {
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
        Ok(())
    }

    fn check(&self, headers: &HeaderMap, token: Option<&str>) -> Result<(), StatusCode> {
        self.check_origin(headers)?;
        if ask_user_seam::secret::same(token.unwrap_or_default().as_bytes(), self.token.as_bytes())
        {
            Ok(())
        } else {
            Err(StatusCode::UNAUTHORIZED)
        }
    }
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
    ticket: Option<String>,
}

impl Gate {
    /// Admits a request that passed the Host and Origin checks with the
    /// token: from the `x-ask-user-token` header, an `Authorization: Bearer`
    /// header, the `token` query parameter where a browser cannot set
    /// headers, or the cookie a one-time link set (the first of them given).
    #[allow(
        clippy::result_large_err,
        reason = "axum's response, built only for a request refused"
    )]
    pub fn admit(&self, parts: &Parts) -> Result<(), Response> {
        let query = Query::<TokenQuery>::try_from_uri(&parts.uri).ok();
        let header = |name| {
            parts
                .headers
                .get(name)
                .and_then(|value| value.to_str().ok())
        };
        let bearer = header(header::AUTHORIZATION).and_then(|value| value.strip_prefix("Bearer "));
        let cookie = cookie(&parts.headers, &self.cookie());
        let token = [
            header(header::HeaderName::from_static("x-ask-user-token")),
            bearer,
            query.as_ref().and_then(|q| q.token.as_deref()),
            cookie,
        ]
        .into_iter()
        .flatten()
        .find(|token| !token.is_empty());
        self.check(&parts.headers, token).map_err(turned_away)
    }

    /// The page for an admitted request; with a one-time link (`?ticket=`),
    /// first the cookie that lets this browser in, and a redirect to the
    /// page without the ticket.
    pub fn front(&self, parts: &Parts) -> Response {
        let query = Query::<TokenQuery>::try_from_uri(&parts.uri).ok();
        let Some(ticket) = query.and_then(|q| q.0.ticket) else {
            return match self.admit(parts) {
                Ok(()) => page_html(),
                // A person's browser without the way in: a page saying how.
                Err(refused) if refused.status() == StatusCode::UNAUTHORIZED => {
                    self.closed("This page needs a way in that this browser does not have.")
                }
                Err(refused) => refused,
            };
        };
        if let Err(status) = self.check_origin(&parts.headers) {
            return turned_away(status);
        }
        if !self.redeem(&ticket) {
            return self.closed(
                "This link was used already, or has expired: each link opens the page once.",
            );
        }
        let cookie = format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie(),
            self.token()
        );
        (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, "/".to_owned()),
                (header::SET_COOKIE, cookie),
                (header::REFERRER_POLICY, "no-referrer".to_owned()),
            ],
        )
            .into_response()
    }
}

/// The value of the cookie `name` in `headers`, if sent.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A request its desk admitted, and who it comes from. Every route but
/// the page's address takes it.
struct Admitted<V>(V);

impl<D: Desk> FromRequestParts<Arc<D>> for Admitted<D::Viewer> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, desk: &Arc<D>) -> Result<Self, Response> {
        desk.admit(parts).await.map(Admitted)
    }
}

impl Gate {
    /// The page a person's browser gets without a way in: `why`, and how
    /// to get in (401, as HTML a person reads).
    fn closed(&self, why: &str) -> Response {
        let page = CLOSED
            .replace("{why}", &html_text(why))
            .replace("{how}", &html_text(self.opened_by));
        let mut response = html(&page);
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        response
    }
}

/// The page of a browser without a way in.
const CLOSED: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>ask-user: open the page anew</title><style>body { font: 1rem/1.5 system-ui, sans-serif; \
max-width: 36rem; margin: 3rem auto; padding: 0 1rem; } code { background: #8882; padding: 0 .3rem; \
border-radius: .2rem; }</style></head><body><h1>Open the page anew</h1><p>{why}</p><p>{how}</p>\
</body></html>\n";

/// `text` for HTML: what could be markup is escaped.
fn html_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The answer page, its script and style allowed by a nonce fresh for
/// each response: nothing inline but them runs or applies.
pub fn page_html() -> Response {
    html(PAGE)
}

/// `page` (this module's kind: one inline `<style>` and `<script>`) with
/// its headers: a fresh nonce for its style and script, no framing, no
/// referrer.
pub fn html(page: &str) -> Response {
    let Ok(nonce) = ask_user_seam::secret::token() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let policy = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         connect-src 'self'; base-uri 'none'; form-action 'none'"
    );
    let page = page
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

async fn events<D: Desk>(
    Admitted(viewer): Admitted<D::Viewer>,
    State(desk): State<Arc<D>>,
) -> Response {
    // Subscribe before reading what is pending, so nothing falls between.
    let live = desk.subscribe();
    let client = format!(
        "page-{}",
        ask_user_seam::secret::token().unwrap_or_default()
    );
    let mut ready = remote::ready(&client);
    if let Some(name) = desk.signed_in(&viewer) {
        ready["signedIn"] = name.into();
    }
    let mut first = vec![ready];
    first.extend(
        desk.pending_frames()
            .await
            .into_iter()
            .filter(|shown| desk.shows(&viewer, &shown.audience))
            .map(|shown| shown.frame),
    );
    let page = Page {
        closing: desk.closing(),
        _guard: desk.clone().page_opened(),
        desk,
        viewer,
        live,
        closed: false,
        said_closed: false,
    };
    let live = stream::unfold(page, |mut page| async move {
        let frame = page.next().await?;
        Some((frame, page))
    });
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

/// One page's live stream.
struct Page<D: Desk> {
    desk: Arc<D>,
    viewer: D::Viewer,
    live: broadcast::Receiver<PageFrame>,
    closing: CancellationToken,
    /// Whether the desk closed: the frames already sent (the cancels of
    /// questions that just left) still reach the page, then a last frame
    /// (`closed`, saying whether its server comes back), then it ends.
    closed: bool,
    /// Whether that last frame was sent.
    said_closed: bool,
    _guard: Box<dyn Send + Sync>,
}

impl<D: Desk> Page<D> {
    /// The next frame this page's viewer may see; `None` ends the stream.
    /// On lag (a page too slow to keep up has missed frames),
    /// [`PageFrame::Reconnect`], or close, the stream ends, and the page
    /// reconnects to what is pending then.
    async fn next(&mut self) -> Option<Value> {
        loop {
            let frame = if self.closed {
                match self.live.try_recv() {
                    Ok(frame) => frame,
                    Err(_) if !self.said_closed => {
                        self.said_closed = true;
                        return Some(json!({"type": "closed", "again": self.desk.comes_back()}));
                    }
                    Err(_) => return None,
                }
            } else {
                tokio::select! {
                    biased;
                    frame = self.live.recv() => frame.ok()?,
                    () = self.closing.cancelled() => {
                        self.closed = true;
                        continue;
                    }
                }
            };
            match frame {
                PageFrame::Reconnect => return None,
                PageFrame::Show(shown) if self.desk.shows(&self.viewer, &shown.audience) => {
                    return Some(shown.frame);
                }
                PageFrame::Show(_) => {}
            }
        }
    }
}

async fn answer<D: Desk>(
    Admitted(viewer): Admitted<D::Viewer>,
    State(desk): State<Arc<D>>,
    body: axum::body::Bytes,
) -> Response {
    let frame: UpFrame = match serde_json::from_slice(&body) {
        Ok(frame) => frame,
        Err(error) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("not an outcome frame: {error}"),
            );
        }
    };
    settled(desk.settle(&viewer, &frame.event_id, frame.outcome).await)
}

/// The reply to a settlement: 200, 422 with why the answers do not fit
/// (the question stays open, so the human can correct them), 503 when it
/// could not be recorded (the same answer may be sent again), or 409.
pub fn settled(result: Result<(), Unsettled>) -> Response {
    match result {
        Ok(()) => StatusCode::OK.into_response(),
        Err(Unsettled::Misfit(error)) => refusal(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_answer",
            error.message(),
        ),
        Err(Unsettled::Unrecorded(why)) => refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!("the answer could not be recorded ({why}); nothing changed: try again"),
        ),
        Err(Unsettled::NotPending) => refusal(
            StatusCode::CONFLICT,
            "not_waiting",
            "this question was already answered or withdrawn",
        ),
    }
}

/// Why a question left the pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// A human answered it elsewhere (another window, the command line).
    Answered,
    /// A human dismissed it elsewhere.
    Dismissed,
    /// Its agent stopped waiting (its call ended: aborted, timed out).
    Withdrawn,
    /// Its agent was gone longer than the retention period.
    Expired,
}

impl Left {
    /// As a `cancel` frame's `reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Left::Answered => "answered",
            Left::Dismissed => "dismissed",
            Left::Withdrawn => "withdrawn",
            Left::Expired => "expired",
        }
    }

    /// Why an `outcome` settled a question.
    pub fn settled_by(outcome: &Outcome) -> Left {
        match outcome {
            Outcome::Rejected { .. } => Left::Dismissed,
            _ => Left::Answered,
        }
    }
}

/// A `cancel` frame (SPEC §5) with why the question left, so that a page
/// can say it.
pub fn cancel(event_id: &str, why: Left) -> Value {
    let mut frame = remote::cancel(event_id);
    frame["reason"] = why.as_str().into();
    frame
}

/// The `cancel` frame of a question its agent withdrew, with the agent's
/// reason (at most [`MAX_REASON_CHARS`] of it), so that a page can say
/// where it went ("answered in Claude Code").
pub fn withdrawn(event_id: &str, reason: &str) -> Value {
    let mut frame = cancel(event_id, Left::Withdrawn);
    frame["detail"] = reason
        .chars()
        .take(MAX_REASON_CHARS)
        .collect::<String>()
        .into();
    frame
}

/// The most of an agent's reason for withdrawing a question that a page
/// shows.
pub const MAX_REASON_CHARS: usize = 200;

/// A request the gate turns away: 401 without the way in, 403 from
/// another site or to another address.
fn turned_away(status: StatusCode) -> Response {
    match status {
        StatusCode::UNAUTHORIZED => refusal(
            status,
            "unauthorized",
            "open the address ask-user printed: it carries the token",
        ),
        _ => refusal(
            status,
            "foreign_origin",
            "this server answers only its own page on its own address",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_withdrawal_says_why_in_a_bounded_detail() {
        let frame = withdrawn("e1", "answered in Claude Code");
        assert_eq!(frame["type"], "cancel");
        assert_eq!(frame["reason"], "withdrawn");
        assert_eq!(frame["detail"], "answered in Claude Code");
        let long = "é".repeat(MAX_REASON_CHARS + 50);
        let frame = withdrawn("e1", &long);
        let detail = frame["detail"].as_str().unwrap();
        assert_eq!(detail.chars().count(), MAX_REASON_CHARS);
        assert!(cancel("e1", Left::Answered).get("detail").is_none());
    }
}
