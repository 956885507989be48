//! What one call's store holds, and why the sandbox may stop a call.
//!
//! The caller, the turn's signal and the seam are bound into the store's
//! [`AskContext`] by the host before the call enters the guest; the guest
//! passes questions only. WASI is linked with nothing granted: no files, no
//! environment, no network, no arguments (the shipped component imports no
//! WASI at all; a std-built component of the same world still links).

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::contract::{AskContext, UserQuestionsView};
use crate::cpu::CpuClock;
use ask_user_seam::ErrorCode;

/// Why the sandbox stopped a call: the error a trap carries, so the host can
/// name it to the model with a code of its own. (What the contract refuses
/// at the seam is [`crate::contract::Refusal`].)
#[derive(Debug)]
pub enum Breach {
    /// More CPU time inside the guest than the deadline allows.
    Deadline(Duration),
    /// More linear memory than the cap allows.
    Memory { cap: usize, desired: usize },
}

impl Breach {
    /// The code of the error result (`GUEST_*`).
    pub fn code(&self) -> ErrorCode {
        match self {
            Breach::Deadline(_) => ErrorCode::GuestDeadlineExceeded,
            Breach::Memory { .. } => ErrorCode::GuestMemoryExceeded,
        }
    }
}

impl std::fmt::Display for Breach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Breach::Deadline(deadline) => write!(
                f,
                "the component used more than its CPU deadline of {deadline:?}"
            ),
            Breach::Memory { cap, desired } => write!(
                f,
                "the component asked for {desired} bytes of memory, over its cap of {cap} bytes"
            ),
        }
    }
}

impl std::error::Error for Breach {}

/// The per-call state of a store.
pub(crate) struct CallState {
    /// Made when a component first uses WASI (the shipped one never does:
    /// making it costs a seeded random generator per call).
    wasi: Option<WasiCtx>,
    table: ResourceTable,
    memory: MemoryCap,
    ask: AskContext,
    /// The call's CPU time, and how much it may use.
    clock: Arc<CpuClock>,
    cpu_deadline: Duration,
}

impl CallState {
    pub fn new(
        ask: AskContext,
        clock: Arc<CpuClock>,
        cpu_deadline: Duration,
        memory_cap: usize,
    ) -> Self {
        CallState {
            wasi: None,
            table: ResourceTable::new(),
            memory: MemoryCap { cap: memory_cap },
            ask,
            clock,
            cpu_deadline,
        }
    }

    /// The seam import's state, once the run is over.
    pub fn into_ask(self) -> AskContext {
        self.ask
    }

    pub fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.memory
    }

    /// Called at every epoch tick while the guest runs: past its CPU time
    /// the call traps. Time waiting on the human or on the executor is not
    /// CPU time of the call and never counts.
    pub fn on_epoch(&mut self) -> wasmtime::Result<UpdateDeadline> {
        if self.clock.elapsed() > self.cpu_deadline {
            return Err(wasmtime::Error::new(Breach::Deadline(self.cpu_deadline)));
        }
        // Yield to the executor at each tick so a busy guest shares the thread.
        Ok(UpdateDeadline::Yield(1))
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            // Nothing granted: WasiCtx::builder() starts empty and stays so.
            ctx: self.wasi.get_or_insert_with(|| WasiCtx::builder().build()),
            table: &mut self.table,
        }
    }
}

impl UserQuestionsView for CallState {
    fn user_questions(&mut self) -> &mut AskContext {
        &mut self.ask
    }
}

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
