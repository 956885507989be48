//! The engine layer: one wasmtime [`Engine`] per process, shared by every
//! [`ToolRuntime`](crate::ToolRuntime) that does not bring its own, with the
//! settings the sandbox relies on and the thread that drives its CPU deadline.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the engine's epoch advances: the granularity of the CPU
/// deadline (see [`RuntimeConfig::cpu_deadline`](crate::RuntimeConfig)).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// How an [`Engine`] is set up.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Component instances that may be alive at once across every runtime on
    /// the engine: the pooling allocator's slots. A run waits for a free
    /// one (each runtime also has its own
    /// [`max_concurrent_calls`](crate::RuntimeConfig::max_concurrent_calls)).
    /// An instance is alive only while the component runs, never while a
    /// call waits for the human. Instances made on [`Engine::wasmtime`]
    /// directly take slots this count does not see: a run that finds the
    /// pool full then fails `HOST_BUSY`. Default 256: each slot reserves
    /// address space up front, which costs a little at start (1,024 slots:
    /// 2 ms more per process).
    pub pool_slots: u32,
    /// Use the pooling allocator when the machine can reserve its address
    /// space (probed at start; otherwise instances are allocated on demand,
    /// and a `tracing` warning says so). Default true.
    pub pooling: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            pool_slots: 256,
            pooling: true,
        }
    }
}

/// A wasmtime engine set up for the tool sandbox. Cheap to clone: clones
/// share one engine, its compiled code and its pool.
#[derive(Clone)]
pub struct Engine {
    inner: wasmtime::Engine,
    pooling: bool,
    /// One permit per slot of the pool, taken by every run of every runtime
    /// on this engine (none without pooling): a run waits for a slot
    /// instead of failing.
    slots: Option<Arc<Semaphore>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("pooling", &self.pooling)
            .finish()
    }
}

impl Engine {
    /// The process's shared engine, made with [`EngineConfig::default`] on
    /// first use.
    pub fn shared() -> wasmtime::Result<&'static Engine> {
        static SHARED: OnceLock<Engine> = OnceLock::new();
        if let Some(engine) = SHARED.get() {
            return Ok(engine);
        }
        let engine = Engine::new(&EngineConfig::default())?;
        // Two first users at once: one engine wins, the other is dropped
        // (its ticker stops by itself).
        Ok(SHARED.get_or_init(|| engine))
    }

    /// An engine of its own, e.g. with a larger pool.
    pub fn new(config: &EngineConfig) -> wasmtime::Result<Engine> {
        let engine = match config.pooling {
            true => match wasmtime::Engine::new(&settings(Some(config.pool_slots))) {
                Ok(engine) => Some(engine),
                Err(error) => {
                    // The pool reserves address space for every slot up
                    // front; some machines (39-bit address spaces, tight
                    // `ulimit -v`) cannot give it.
                    tracing::warn!(
                        %error,
                        slots = config.pool_slots,
                        "the pooling allocator cannot reserve its memory; allocating instances on demand instead"
                    );
                    None
                }
            },
            false => None,
        };
        let pooling = engine.is_some();
        let inner = match engine {
            Some(engine) => engine,
            None => wasmtime::Engine::new(&settings(None))?,
        };
        start_ticker(&inner)?;
        Ok(Engine {
            inner,
            pooling,
            slots: pooling.then(|| Arc::new(Semaphore::new(config.pool_slots as usize))),
        })
    }

    /// Whether instances come from the pooling allocator.
    pub fn is_pooling(&self) -> bool {
        self.pooling
    }

    /// Slots of the pool free now for a run of a runtime on this engine
    /// (`None` without pooling: no bound).
    pub fn slots_free(&self) -> Option<usize> {
        self.slots.as_ref().map(|slots| slots.available_permits())
    }

    /// A slot for one run, once one is free. Without pooling, at once (and
    /// it holds nothing).
    pub(crate) async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        let slots = self.slots.as_ref()?;
        // Never closed.
        slots.clone().acquire_owned().await.ok()
    }

    /// Compiles `component` for this engine, for
    /// [`ToolRuntime::from_precompiled`](crate::ToolRuntime::from_precompiled).
    pub fn precompile(&self, component: &[u8]) -> wasmtime::Result<Vec<u8>> {
        self.inner.precompile_component(component)
    }

    /// The wasmtime engine, for an embedder that builds its own
    /// [`Linker`](wasmtime::component::Linker) (see
    /// [`contract::add_to_linker`](crate::contract::add_to_linker)).
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner
    }
}

/// The engine's settings. `slots`: the pooling allocator with that many
/// slots; `None`: on-demand allocation.
fn settings(slots: Option<u32>) -> Config {
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        // The CPU deadline: the ticker advances the epoch, and each store's
        // callback decides whether its call has used up its time.
        .epoch_interruption(true);
    // Without pooling each instance maps fresh memory: copying the tool's
    // few KB of data segments in is cheaper than mapping an image.
    wasm.memory_init_cow(false);
    if let Some(slots) = slots {
        // Instances come from slots reserved up front: instantiation is a
        // few microseconds instead of fresh mmaps, and the number alive at
        // once is bounded. A Rust wasip2 component instantiates a few core
        // modules (its code and the shims that wire WASI), each with at most
        // a memory and a table. Memory size is left at the pool's maximum:
        // each store's limiter holds its call to its own memory cap.
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(slots)
            .total_core_instances(slots * 8)
            .total_memories(slots * 2)
            .total_tables(slots * 8)
            .total_stacks(slots);
        // Measured with perf on loops of calls (docs/src/performance.md).
        // Returning a slot's memory to the system one instance at a time
        // cost an madvise and a TLB shootdown per call: batches of 64 share
        // one. Tables are small: zeroing them in place beats faulting them
        // in again.
        pool.decommit_batch_size(64).table_keep_resident(64 << 10);
        if PoolingAllocationConfig::is_pagemap_scan_available() {
            // Linux 6.7+ tells which pages a call wrote: only those are
            // reset, in place, and stay resident, so the next call on the
            // slot takes no page faults (a call writes about 8 pages; one
            // that writes more than 1 MiB has the rest returned). Then
            // mapping the data segments copy-on-write wins too, as the
            // reset restores them. Whole call 27 µs to 22 µs.
            pool.pagemap_scan(wasmtime::Enabled::Yes)
                .linear_memory_keep_resident(1 << 20);
            wasm.memory_init_cow(true);
        }
        // Elsewhere memory is decommitted after each call and faulted in by
        // the next: copying the data segments in then beats mapping them and
        // taking a copy-on-write fault per page written (3 µs a call), and
        // keeping memory resident would zero the whole 1 MiB guest stack.
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    wasm
}

/// Advances the engine's epoch every [`EPOCH_TICK`]. The thread holds the
/// engine weakly and ends once the engine is gone.
fn start_ticker(engine: &wasmtime::Engine) -> std::io::Result<()> {
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("ask-user-epoch".to_owned())
        .spawn(move || {
            while let Some(engine) = engine.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_engine_is_one_engine() {
        let a = Engine::shared().unwrap();
        let b = Engine::shared().unwrap();
        assert!(std::ptr::eq(a, b));
        assert!(wasmtime::Engine::same(&a.inner, &b.inner));
    }

    #[test]
    fn an_engine_without_pooling_allocates_on_demand() {
        let engine = Engine::new(&EngineConfig {
            pooling: false,
            ..EngineConfig::default()
        })
        .unwrap();
        assert!(!engine.is_pooling());
    }

    #[test]
    fn the_ticker_stops_when_its_engine_is_dropped() {
        let engine = Engine::new(&EngineConfig {
            pooling: false,
            ..EngineConfig::default()
        })
        .unwrap();
        let weak = engine.inner.weak();
        drop(engine);
        // The ticker holds the engine only while it ticks: within a tick
        // the last strong reference is gone.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while weak.upgrade().is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "the ticker kept its engine alive"
            );
            std::thread::yield_now();
        }
    }
}
