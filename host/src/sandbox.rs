//! What one call's store holds, and the import the component calls.
//!
//! This is the trust boundary. The component passes questions only; the
//! caller, the turn's signal and the seam are bound here by the host before
//! the call enters the guest. WASI is linked with nothing granted: no files,
//! no environment, no network, no arguments.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::agents::AgentHandle;
use crate::bindings::{self, ContractViolation, dsh::ask_user::user_questions, wit};
use crate::runtime::RuntimeConfig;
use crate::seam::UserQuestions;

/// Why the sandbox stopped a call: the error a trap carries, so the host can
/// name it to the model with a code of its own.
#[derive(Debug)]
pub enum Breach {
    /// More CPU time inside the guest than the deadline allows.
    Deadline(Duration),
    /// More linear memory than the cap allows.
    Memory { cap: usize, desired: usize },
    /// More asks in one call than allowed.
    TooManyAsks(u32),
    /// A request larger than the host shows the human.
    RequestTooLarge { size: usize, limit: usize },
    /// Something the WIT contract forbids.
    Contract(ContractViolation),
}

impl Breach {
    /// The code of the error result (`GUEST_*`).
    pub fn code(&self) -> &'static str {
        match self {
            Breach::Deadline(_) => "GUEST_DEADLINE_EXCEEDED",
            Breach::Memory { .. } => "GUEST_MEMORY_EXCEEDED",
            Breach::TooManyAsks(_) => "GUEST_TOO_MANY_ASKS",
            Breach::RequestTooLarge { .. } => "GUEST_REQUEST_TOO_LARGE",
            Breach::Contract(_) => "GUEST_CONTRACT_VIOLATION",
        }
    }
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Breach::Deadline(deadline) => write!(
                f,
                "the component ran for more than its CPU deadline of {deadline:?}"
            ),
            Breach::Memory { cap, desired } => write!(
                f,
                "the component asked for {desired} bytes of memory, over its cap of {cap} bytes"
            ),
            Breach::TooManyAsks(max) => write!(
                f,
                "the component asked more than the {max} time(s) one call may ask; the extra \
                 request reached no answerer"
            ),
            Breach::RequestTooLarge { size, limit } => write!(
                f,
                "the component sent a request of {size} bytes, over the host's limit of {limit} \
                 bytes; it reached no answerer"
            ),
            Breach::Contract(violation) => violation.fmt(f),
        }
    }
}

impl std::error::Error for Breach {}

/// The per-call state of a store.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    memory: MemoryCap,
    seam: Arc<UserQuestions>,
    /// Bound by the host; never read from the guest.
    caller: Option<AgentHandle>,
    signal: CancellationToken,
    /// Asks this call has made, and may make.
    asks: u32,
    max_asks: u32,
    max_request_bytes: usize,
    /// CPU time accounting: wall time since entry, less time in the seam.
    entered: Instant,
    in_seam: Duration,
    cpu_deadline: Duration,
}

impl CallState {
    pub fn new(
        seam: Arc<UserQuestions>,
        caller: Option<AgentHandle>,
        signal: CancellationToken,
        config: &RuntimeConfig,
    ) -> Self {
        CallState {
            // Nothing granted: WasiCtx::builder() starts empty and stays so.
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            memory: MemoryCap {
                cap: config.memory_cap,
            },
            seam,
            caller,
            signal,
            asks: 0,
            max_asks: config.max_asks_per_call,
            max_request_bytes: config.max_request_bytes,
            entered: Instant::now(),
            in_seam: Duration::ZERO,
            cpu_deadline: config.cpu_deadline,
        }
    }

    pub fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.memory
    }

    /// Called at every epoch tick while the guest runs. Time spent waiting
    /// on the human (inside the seam) is not the guest's and never counts.
    pub fn on_epoch(&mut self) -> wasmtime::Result<UpdateDeadline> {
        let guest_time = self.entered.elapsed().saturating_sub(self.in_seam);
        if guest_time > self.cpu_deadline {
            return Err(wasmtime::Error::new(Breach::Deadline(self.cpu_deadline)));
        }
        // Yield to the executor at each tick so a busy guest shares the thread.
        Ok(UpdateDeadline::Yield(1))
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wit::Host for CallState {}

impl user_questions::Host for CallState {
    async fn ask(
        &mut self,
        request: wit::Request,
    ) -> wasmtime::Result<Result<Vec<wit::Answer>, wit::AskError>> {
        // The component is untrusted: it may not pester the human or flood
        // the answerers. Either breach ends the call before any answerer runs.
        if self.asks == self.max_asks {
            return Err(wasmtime::Error::new(Breach::TooManyAsks(self.max_asks)));
        }
        self.asks += 1;
        let size = request_size(&request);
        if size > self.max_request_bytes {
            return Err(wasmtime::Error::new(Breach::RequestTooLarge {
                size,
                limit: self.max_request_bytes,
            }));
        }
        let request = bindings::request_from_wit(request)
            .map_err(|violation| wasmtime::Error::new(Breach::Contract(violation)))?;
        let started = Instant::now();
        let result = self
            .seam
            .ask(request, self.caller.as_ref(), &self.signal)
            .await;
        self.in_seam += started.elapsed();
        Ok(result
            .map(|answers| answers.into_iter().map(bindings::answer_to_wit).collect())
            .map_err(|error| bindings::error_to_wit(&error)))
    }
}

/// What [`RuntimeConfig::max_request_bytes`] measures: the bytes of all the
/// request's text, plus [`ITEM_BYTES`] for each question and each option.
fn request_size(request: &wit::Request) -> usize {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    request
        .questions
        .iter()
        .map(|q| {
            let options: usize = q
                .options
                .iter()
                .flatten()
                .map(|o| ITEM_BYTES + o.label.len() + text(&o.description) + text(&o.extra_json))
                .sum();
            let intent = q
                .intent
                .as_ref()
                .map_or(0, |wit::Intent::PlanReview(p)| p.approve.len());
            ITEM_BYTES
                + q.id.len()
                + q.question.len()
                + text(&q.detail)
                + text(&q.header)
                + intent
                + options
        })
        .sum()
}

/// What a question or an option costs beyond its text, roughly its keys and
/// punctuation as JSON: so that many empty items are not free.
const ITEM_BYTES: usize = 32;

/// Caps a store's linear memories and tables.
struct MemoryCap {
    cap: usize,
}

/// Table elements allowed per table; a Rust guest needs a few hundred.
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            // An error (not `Ok(false)`) traps at once with a cause the host
            // can name, instead of a guest's allocation-failure abort.
            return Err(wasmtime::Error::new(Breach::Memory {
                cap: self.cap,
                desired,
            }));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}
