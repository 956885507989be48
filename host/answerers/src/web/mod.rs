//! The web answerer: a page served on loopback where the human answers.
//!
//! The page and its security are [`ask_user_web::answer_page`]'s: the page shows
//! the questions this answerer has open, and posts answers back to it.
//!
//! It claims a request when at least one page is connected. With none, it
//! waits up to its grace period for one, then passes the request on. When
//! every page leaves while a request is claimed and none is back within the
//! grace period, the question is withdrawn from the pages and passed on too
//! (a reload, or a phone that reconnects, keeps it).
//!
//! Bodies are limited to [`MAX_BODY_BYTES`]; connections are bounded in
//! number and time ([`ask_user_web::serve`]). It binds loopback unless told
//! otherwise.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use ask_user_seam::remote::{Outcome, PendingQuestions, Unsettled};
use ask_user_seam::{AnswerFuture, Answerer, Ask, Next};

use super::{AnswererKind, ConfigProblem, KindTable, Page, Setup, Started};
use ask_user_web::answer_page::{self, Desk, Gate, Left, PageFrame, Shown, cancel};
use ask_user_web::serve::{Serving, client_host, listen};
use axum::http::request::Parts;
use axum::response::Response;

/// The largest answer body accepted, in bytes: the largest answer set the
/// tool takes, and its frame.
pub use ask_user_web::answer_page::MAX_BODY_BYTES;

pub use ask_user_web::answer_page::FRAME_BACKLOG;

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
    /// How the page names what asks (`ask-user in ~/src/app`), instead of
    /// the agent's id. Default: none.
    pub asker: Option<String>,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            grace: Some(Duration::from_secs(3)),
            asker: None,
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
    gate: Gate,
    pending: PendingQuestions,
    frames: broadcast::Sender<PageFrame>,
    pages: AtomicUsize,
    page_connected: Notify,
    last_page_left: Notify,
    /// People sent to the page who may not have opened it yet ([`Page::offered`]).
    offers: AtomicUsize,
    offer_ended: Notify,
    grace: Option<Duration>,
    /// Ends the pages' streams when the answerer closes.
    closing: CancellationToken,
}

impl WebAnswerer {
    /// Binds and starts serving.
    pub async fn start(config: WebConfig) -> std::io::Result<Self> {
        let listener = listen(
            "the web answerer",
            SocketAddr::new(config.bind, config.port),
        )
        .await?;
        let address = listener.local_addr()?;
        let frames = broadcast::channel(FRAME_BACKLOG).0;
        let withdrawn = frames.clone();
        let shared = Arc::new(Shared {
            gate: Gate::new(ask_user_seam::secret::token()?, address.port()),
            // A question that leaves (answered, withdrawn) leaves every page.
            pending: PendingQuestions::new("w", move |id, elsewhere| {
                // Settled by the terminal racing the page: the page says so.
                let frame = match elsewhere {
                    Some(how) => answer_page::withdrawn(id, how),
                    None => cancel(id, Left::Withdrawn),
                };
                let _ = withdrawn.send(PageFrame::Show(Shown::to_everyone(frame)));
            })
            .asker(config.asker.clone()),
            frames,
            pages: AtomicUsize::new(0),
            page_connected: Notify::new(),
            last_page_left: Notify::new(),
            offers: AtomicUsize::new(0),
            offer_ended: Notify::new(),
            grace: config.grace,
            closing: CancellationToken::new(),
        });
        let app = answer_page::routes(shared.clone());
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
            self.shared.gate.token()
        )
    }

    /// The page's address without its token, for logs.
    fn url_without_token(&self) -> String {
        format!(
            "http://{}:{}/",
            client_host(self.address),
            self.address.port()
        )
    }

    /// The page, to send a person to.
    pub fn page(&self) -> Page {
        let shared = self.shared.clone();
        Page::new(self.url(), move || {
            shared.offers.fetch_add(1, Ordering::SeqCst);
            Box::new(OfferGuard(shared.clone()))
        })
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
    /// While a person is on their way to the page (an open offer), it waits
    /// for them without a bound, and the grace period starts when the last
    /// offer ends.
    async fn page_present(&self) -> bool {
        let mut deadline = None;
        loop {
            let connected = self.page_connected.notified();
            let offer_ended = self.offer_ended.notified();
            if self.pages.load(Ordering::SeqCst) > 0 {
                return true;
            }
            if self.offers.load(Ordering::SeqCst) > 0 {
                deadline = None;
                tokio::select! {
                    () = connected => {}
                    () = offer_ended => {}
                }
                continue;
            }
            let Some(grace) = self.grace else {
                connected.await;
                continue;
            };
            let until = *deadline.get_or_insert_with(|| tokio::time::Instant::now() + grace);
            if tokio::time::timeout_at(until, connected).await.is_err() {
                return self.pages.load(Ordering::SeqCst) > 0;
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
}

impl Desk for Shared {
    type Viewer = ();

    async fn admit(&self, parts: &Parts) -> Result<(), Response> {
        self.gate.admit(parts)
    }

    async fn front(&self, parts: Parts) -> Response {
        self.gate.front(&parts)
    }

    fn subscribe(&self) -> broadcast::Receiver<PageFrame> {
        self.frames.subscribe()
    }

    async fn pending_frames(&self) -> Vec<Shown> {
        self.pending
            .frames()
            .into_iter()
            .map(Shown::to_everyone)
            .collect()
    }

    fn page_opened(self: Arc<Self>) -> Box<dyn Send + Sync> {
        self.pages.fetch_add(1, Ordering::SeqCst);
        self.page_connected.notify_waiters();
        Box::new(PageGuard(self))
    }

    fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// It serves one run: once closed, it is gone for good.
    fn comes_back(&self) -> bool {
        false
    }

    async fn settle(&self, _: &(), event_id: &str, outcome: Outcome) -> Result<(), Unsettled> {
        let left = Left::settled_by(&outcome);
        self.pending.settle_checked(event_id, outcome)?;
        // Every other page drops the card, saying how it was settled.
        let _ = self
            .frames
            .send(PageFrame::Show(Shown::to_everyone(cancel(event_id, left))));
        Ok(())
    }
}

/// Counts a person as on their way to the page while it lives.
struct OfferGuard(Arc<Shared>);

impl Drop for OfferGuard {
    fn drop(&mut self) {
        self.0.offers.fetch_sub(1, Ordering::SeqCst);
        self.0.offer_ended.notify_waiters();
    }
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

    fn place(&self) -> &str {
        "in the browser"
    }

    fn address(&self) -> Option<String> {
        Some(self.url())
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let shared = &self.shared;
            if !shared.page_present().await {
                return next
                    .pass(format!("no page was open at {}", self.url_without_token()))
                    .await;
            }
            // The page's list never closes, so a question always opens.
            let Ok(pending) = shared.pending.open(ask) else {
                return next.run().await;
            };
            let mut pending = pending.telling(next.elsewhere());
            let _ = shared
                .frames
                .send(PageFrame::Show(Shown::to_everyone(pending.frame().clone())));
            let outcome = tokio::select! {
                settled = pending.settled() => settled.and_then(Result::ok),
                // Every page left and none came back within the grace period.
                () = shared.abandoned() => None,
            };
            // Withdrawn from the pages, unless a page settled it.
            drop(pending);
            match outcome.and_then(Outcome::into_answers) {
                Some(answered) => answered,
                None => next.pass("every page left while it was open").await,
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
                Some(grace) => Some(ask_user_seam::config::duration(grace)?),
            },
            ..defaults
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
                page: Some(web.page()),
                answerer: Arc::new(web),
                notice: Some(notice),
            })
        })
    }
}
