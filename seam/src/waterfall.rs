//! The answerer waterfall (SPEC §3): answerers in order, each of which claims
//! a request (returns answers), passes it on ([`Next::run`]) or fails it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::ErrorCode;
use crate::agents::AgentHandle;
use crate::error::{AnswerError, AskError};
use crate::question::{Answer, AskRequest};
use crate::scope::Scope;
use crate::sync::lock;

/// What an answerer's future resolves to.
pub type AnswerFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<Answer>, AnswerError>> + Send + 'a>>;

/// Something that can answer questions: a terminal, a script, a web page…
///
/// `answer` claims the request by returning answers, passes it on by
/// returning `next.run().await` (optionally acting before and after), or
/// fails the whole ask by returning an error. Dropping the returned future
/// withdraws the question: the host does so when the turn is aborted or a
/// time limit passes, so cleanup belongs in `Drop`.
pub trait Answerer: Send + Sync + 'static {
    /// A short name for messages and audit records, e.g. `script`.
    fn name(&self) -> &str;

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a>;

    /// Where a human answers through it, for another answerer racing it to
    /// say where the question went ("answered in the browser"); see
    /// [`Next::elsewhere`].
    fn place(&self) -> &str {
        "elsewhere"
    }

    /// Where a human can answer through it, said to another answerer
    /// racing it (the web page's address, for the terminal to keep in
    /// view); see [`Next::also_at`].
    fn address(&self) -> Option<String> {
        None
    }

    /// Ends what the answerer keeps running (a prompt on screen, a child
    /// process, a server) and resolves once it has: a host calls it before
    /// it exits, so that nothing is left behind. Asks after it pass on or
    /// fail. Default: nothing to end.
    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }
}

/// One ask as an answerer sees it.
#[derive(Debug)]
pub struct Ask {
    pub request: AskRequest,
    /// The calling agent; `None` for an agentless request.
    pub caller: Option<AgentHandle>,
    /// The turn's cancellation. Answerers may watch it; the host also races
    /// it and drops the answerer's future when it fires.
    pub signal: CancellationToken,
    /// A sub-agent's ask relayed by the host ([`Delegated::Relay`]): its
    /// chain of agents as the host named them, root first, the asker last
    /// (`["session-1", "reviewer"]`). Empty for a root's own ask. The host
    /// sets it; the component can neither set nor see it.
    ///
    /// [`Delegated::Relay`]: crate::Delegated::Relay
    pub asked_by: Vec<String>,
}

impl Ask {
    /// Who asks, for a person to read, when a sub-agent asks
    /// (`session-1 › reviewer`); `None` for a root's own ask.
    pub fn asked_by_label(&self) -> Option<String> {
        (!self.asked_by.is_empty()).then(|| self.asked_by.join(" › "))
    }
}

/// Where an answerer goes in the waterfall.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// Only requests whose caller's scope chain has this key reach the
    /// answerer. `None`: every request, agentless ones included.
    pub scope: Option<String>,
    /// How long the answerer may take to claim, pass or fail a request. The
    /// clock stops when it passes the request on. `None`: no limit.
    pub timeout: Option<Duration>,
    /// Go ahead of the answerers already registered.
    pub prepend: bool,
}

/// The ordered answerers of a host.
#[derive(Default)]
pub struct Waterfall {
    links: Arc<Mutex<Vec<Link>>>,
    ids: AtomicU64,
}

#[derive(Clone)]
struct Link {
    id: u64,
    answerer: Arc<dyn Answerer>,
    scope: Option<String>,
    timeout: Option<Duration>,
}

/// Removes its answerer from the waterfall when disposed. Disposing twice,
/// or after the waterfall is gone, is harmless. Dropping the handle does not
/// dispose: an answerer registered for good needs no handle kept.
#[derive(Debug, Clone)]
pub struct AnswererHandle {
    id: u64,
    links: Weak<Mutex<Vec<Link>>>,
}

impl AnswererHandle {
    /// Removes the answerer. Returns whether it was still registered.
    /// An ask already under way keeps the answerers it started with.
    pub fn dispose(&self) -> bool {
        let Some(links) = self.links.upgrade() else {
            return false;
        };
        let mut links = lock(&links);
        let before = links.len();
        links.retain(|link| link.id != self.id);
        links.len() != before
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("answerer", &self.answerer.name())
            .field("scope", &self.scope)
            .finish()
    }
}

impl Waterfall {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an answerer at the end (or the front, with `prepend`).
    pub fn register(&self, answerer: impl Answerer, placement: Placement) -> AnswererHandle {
        self.register_arc(Arc::new(answerer), placement)
    }

    /// As [`register`](Self::register), for an answerer that is shared.
    pub fn register_arc(
        &self,
        answerer: Arc<dyn Answerer>,
        placement: Placement,
    ) -> AnswererHandle {
        let link = Link {
            id: self.ids.fetch_add(1, Ordering::Relaxed),
            answerer,
            scope: placement.scope,
            timeout: placement.timeout,
        };
        let id = link.id;
        let mut links = lock(&self.links);
        if placement.prepend {
            links.insert(0, link);
        } else {
            links.push(link);
        }
        AnswererHandle {
            id,
            links: Arc::downgrade(&self.links),
        }
    }

    /// Offers `ask` to the answerers that `scope` reaches, in order. Nobody
    /// claims: `NO_PROVIDER`. `claimed_by` receives the name of the answerer
    /// that gave the answers.
    pub(crate) async fn dispatch(
        &self,
        ask: &Ask,
        scope: Option<&Scope>,
        claimed_by: &Mutex<Option<String>>,
    ) -> Result<Vec<Answer>, AnswerError> {
        let chain: Vec<Link> = lock(&self.links)
            .iter()
            .filter(|link| match (&link.scope, scope) {
                (None, _) => true,
                (Some(key), Some(scope)) => scope.reaches(key),
                (Some(_), None) => false,
            })
            .cloned()
            .collect();
        let passes = Mutex::new(Vec::new());
        Next {
            chain: &chain,
            ask,
            passed: None,
            claimed_by,
            from: None,
            passes: &passes,
            lane: false,
            beside: false,
            elsewhere: Elsewhere::default(),
            also_at: Vec::new(),
        }
        .run()
        .await
    }
}

/// How the question an answerer holds was settled by another answerer racing
/// it ([`Race`]), once it was: "answered in the browser", "dismissed at the
/// terminal". A withdrawn prompt can say so instead of "the agent stopped
/// waiting".
#[derive(Debug, Clone, Default)]
pub struct Elsewhere(Arc<OnceLock<String>>);

impl Elsewhere {
    /// How it was settled elsewhere; `None` while it was not.
    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// The rest of the waterfall after the current answerer.
pub struct Next<'a> {
    chain: &'a [Link],
    ask: &'a Ask,
    /// Set when the current answerer passes the request on: its clock stops.
    passed: Option<Arc<AtomicBool>>,
    /// The first answerer to return answers, innermost first, is the one
    /// that claimed; the ones that passed return its answers after it.
    claimed_by: &'a Mutex<Option<String>>,
    /// The answerer that holds this `Next` (`None` before the first).
    from: Option<&'a str>,
    /// Who passed the request on so far, and why, for the log line of a
    /// request nobody took.
    passes: &'a Mutex<Vec<String>>,
    /// A lane of a [`Race`]: its end is the answerer passing, not the end
    /// of the waterfall.
    lane: bool,
    /// Run beside an answerer that keeps the request ([`Next::run_beside`]):
    /// its end is not the end of the waterfall either.
    beside: bool,
    /// A lane's: how another lane settled the question.
    elsewhere: Elsewhere,
    /// A lane's: where the other lanes offer it too (their addresses).
    also_at: Vec<String>,
}

impl<'a> Next<'a> {
    /// Offers the request to the next answerer and returns what the rest of
    /// the waterfall answered. Consumes `self`: the rest runs at most once.
    pub fn run(self) -> AnswerFuture<'a> {
        self.pass("it passed the request on")
    }

    /// As [`run`](Self::run), while this answerer keeps the request too (a
    /// form shown beside the rest of the chain, answered by whichever comes
    /// first): when the rest passes, `NO_PROVIDER` comes back as for a
    /// lane, and nothing is logged as a request nobody took.
    pub fn run_beside(mut self) -> AnswerFuture<'a> {
        self.beside = true;
        self.run()
    }

    /// How another answerer racing this one settled the question, once it
    /// has (read it when withdrawn); never set outside a [`Race`].
    pub fn elsewhere(&self) -> Elsewhere {
        self.elsewhere.clone()
    }

    /// Where the answerers racing this one offer the question too (the web
    /// page's address): empty outside a [`Race`].
    pub fn also_at(&self) -> &[String] {
        &self.also_at
    }

    /// [`run`](Self::run), saying why this answerer passes (no terminal, no
    /// rule for a question, …): when nobody takes the request, the reasons
    /// are logged as one warning, so whoever runs the host sees why the
    /// agent got `NO_PROVIDER`. The model never sees them.
    pub fn pass(self, why: impl Into<String>) -> AnswerFuture<'a> {
        if let Some(from) = self.from {
            lock(self.passes).push(format!("{from}: {}", why.into()));
        }
        if let Some(passed) = &self.passed {
            passed.store(true, Ordering::Release);
        }
        let Some((link, rest)) = self.chain.split_first() else {
            if self.lane || self.beside {
                return Box::pin(std::future::ready(Err(AnswerError::Seam(AskError::new(
                    ErrorCode::NoProvider,
                    "passed",
                )))));
            }
            let passes = lock(self.passes);
            if passes.is_empty() {
                tracing::warn!("no answerer took the question: no answerer reaches this caller");
            } else {
                tracing::warn!("no answerer took the question ({})", passes.join("; "));
            }
            return Box::pin(std::future::ready(Err(AnswerError::Seam(AskError::new(
                ErrorCode::NoProvider,
                "no answerer took the question: nobody is there to answer it right now. \
                 Continue without the answer, or end your turn with the question",
            )))));
        };
        let (ask, claimed_by) = (self.ask, self.claimed_by);
        let passed = link.timeout.map(|_| Arc::new(AtomicBool::new(false)));
        let next = Next {
            chain: rest,
            ask,
            passed: passed.clone(),
            claimed_by,
            from: Some(link.answerer.name()),
            passes: self.passes,
            lane: false,
            beside: self.beside,
            elsewhere: Elsewhere::default(),
            also_at: Vec::new(),
        };
        let mut answering = link.answerer.answer(ask, next);
        if let (Some(limit), Some(passed)) = (link.timeout, passed) {
            answering = Box::pin(TimeLimited {
                answering,
                clock: Box::pin(tokio::time::sleep(limit)),
                passed,
                answerer: link.answerer.name(),
                limit,
            });
        }
        let name = link.answerer.name();
        Box::pin(async move {
            tracing::debug!(answerer = name, "offered");
            let result = answering.await;
            match &result {
                Ok(_) => {
                    lock(claimed_by).get_or_insert_with(|| name.to_owned());
                    tracing::debug!(answerer = name, "answers returned");
                }
                Err(error) => tracing::debug!(answerer = name, ?error, "failed"),
            }
            result
        })
    }
}

/// Answerers offered one request at the same time, as one link of the
/// waterfall: the first to return answers (or fail the ask) ends the race,
/// and the others are withdrawn (their futures dropped, as on a time
/// limit). One that passes drops out; when every one has passed, the
/// request goes on down the waterfall. For a human who may answer at the
/// terminal or in a browser, whichever is nearer.
pub struct Race {
    name: String,
    answerers: Vec<Arc<dyn Answerer>>,
}

impl Race {
    /// A race of `answerers`, named after them (`terminal|web`).
    pub fn new(answerers: Vec<Arc<dyn Answerer>>) -> Self {
        let names: Vec<&str> = answerers.iter().map(|a| a.name()).collect();
        Race {
            name: names.join("|"),
            answerers,
        }
    }
}

impl Answerer for Race {
    fn name(&self) -> &str {
        &self.name
    }

    fn close(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            for answerer in &self.answerers {
                answerer.close().await;
            }
        })
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let passes = Mutex::new(Vec::new());
            let addresses: Vec<Option<String>> =
                self.answerers.iter().map(|a| a.address()).collect();
            let mut lanes: Vec<Lane<'_>> = self
                .answerers
                .iter()
                .enumerate()
                .map(|(n, answerer)| {
                    let also_at = addresses
                        .iter()
                        .enumerate()
                        .filter(|(other, _)| *other != n)
                        .filter_map(|(_, address)| address.clone())
                        .collect();
                    let passed = Arc::new(AtomicBool::new(false));
                    let elsewhere = Elsewhere::default();
                    let lane = Next {
                        chain: &[],
                        ask,
                        passed: Some(passed.clone()),
                        claimed_by: next.claimed_by,
                        from: Some(answerer.name()),
                        passes: &passes,
                        lane: true,
                        beside: false,
                        elsewhere: elsewhere.clone(),
                        also_at,
                    };
                    Lane {
                        answerer: answerer.as_ref(),
                        passed,
                        elsewhere,
                        answering: answerer.answer(ask, lane),
                    }
                })
                .collect();
            while !lanes.is_empty() {
                let (done, result) = std::future::poll_fn(|cx| {
                    for (n, lane) in lanes.iter_mut().enumerate() {
                        if let Poll::Ready(result) = lane.answering.as_mut().poll(cx) {
                            return Poll::Ready((n, result));
                        }
                    }
                    Poll::Pending
                })
                .await;
                let won = lanes.swap_remove(done);
                if result.is_ok() {
                    // The audit trail names the lane that answered.
                    lock(next.claimed_by).get_or_insert_with(|| won.answerer.name().to_owned());
                }
                if result.is_ok() || !won.passed.load(Ordering::Acquire) {
                    // The other lanes hear where it went, then dropping
                    // them withdraws the question there.
                    let how = match &result {
                        Ok(_) => Some("answered"),
                        Err(AnswerError::Seam(error))
                            if error.code() == Some(&ErrorCode::AskCancelled) =>
                        {
                            Some("dismissed")
                        }
                        Err(_) => None,
                    };
                    if let Some(how) = how {
                        for lane in &lanes {
                            let _ = lane
                                .elsewhere
                                .0
                                .set(format!("{how} {}", won.answerer.place()));
                        }
                    }
                    return result;
                }
            }
            let why = lock(&passes).join("; ");
            next.pass(why).await
        })
    }
}

/// One answerer of a [`Race`], answering.
struct Lane<'a> {
    answerer: &'a dyn Answerer,
    passed: Arc<AtomicBool>,
    elsewhere: Elsewhere,
    answering: AnswerFuture<'a>,
}

/// An answerer's future with its time limit, which stops once it has passed
/// the request on.
struct TimeLimited<'a> {
    answering: AnswerFuture<'a>,
    clock: Pin<Box<tokio::time::Sleep>>,
    passed: Arc<AtomicBool>,
    answerer: &'a str,
    limit: Duration,
}

impl Future for TimeLimited<'_> {
    type Output = Result<Vec<Answer>, AnswerError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(result) = self.answering.as_mut().poll(cx) {
            return Poll::Ready(result);
        }
        if self.passed.load(Ordering::Acquire) || self.clock.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(Err(AnswerError::Seam(AskError::new(
            ErrorCode::AskTimedOut,
            format!(
                "no answer from the {} answerer within {:?}; the question was withdrawn. \
                 Continue without the answer, or ask again later",
                self.answerer, self.limit
            ),
        ))))
    }
}
