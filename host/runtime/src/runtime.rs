//! Running the tool component: compiled once on an [`Engine`] and
//! pre-instantiated, one store per call, with a CPU deadline and a memory cap.

use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

use ask_user_seam::{AgentHandle, AskError, ErrorCode, UserQuestions};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

use crate::cache::CodeCache;
use crate::contract::replay::{Replay, Suspended};
use crate::contract::{
    self, AskContext, AskLimits, RawDefinition, Refusal, ToolOutput, ToolPre, Version,
};
use crate::cpu::CpuClock;
use crate::engine::Engine;
use crate::sandbox::{Breach, CallState};
use crate::tool_result::ToolResult;

/// The limits of the sandbox. Every one is per call unless it says otherwise.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// CPU time a call may use: its thread's CPU time while it is polled
    /// (instantiation and the guest's work, and the host's own checks in
    /// between, a few microseconds). Waiting on the human, or in the
    /// executor's queue on a loaded machine, never counts. Past it:
    /// `GUEST_DEADLINE_EXCEEDED`. Default 1 s; honest calls use well under a
    /// millisecond. Checked every [`EPOCH_TICK`](crate::engine::EPOCH_TICK).
    pub cpu_deadline: Duration,
    /// Linear memory a call may use, in bytes. Past it:
    /// `GUEST_MEMORY_EXCEEDED`. Default 32 MiB.
    pub memory_cap: usize,
    /// Runs of the component that may be under way at once: instances
    /// alive. A call holds one only while the component runs (microseconds;
    /// at most the CPU deadline), never while it waits for the human; a run
    /// waits for one, and for a slot of the engine's pool (see
    /// [`EngineConfig::pool_slots`](crate::EngineConfig)). Default 250,
    /// under the default pool of 256.
    pub max_concurrent_calls: u32,
    /// Calls that may be under way at once, waiting for the human or not.
    /// A waiting call holds no instance: its arguments, its request, what
    /// the answerers keep for it, about 6 KiB in all (measured by the
    /// `tool_call` bench). One more call fails with `HOST_BUSY` before it
    /// reaches an answerer. Default 10,000.
    pub max_waiting_calls: u32,
    /// Largest result the component may return (text plus answers), in
    /// bytes. Past it: `GUEST_OUTPUT_TOO_LARGE`. Default 4 MiB, which holds
    /// the largest answers the tool's limits allow, so no answer the human
    /// gave is dropped for its size: ids and picked labels echo the
    /// arguments (at most 256 KiB as JSON), own words add at most 16
    /// answers × 16,000 characters × 6 bytes (a JSON escape) = 1.5 MiB; the
    /// text and the structured answers each hold that, under 3.6 MB in all.
    pub max_output_bytes: usize,
    /// Largest arguments the host passes into the component, in bytes.
    /// Past it the call fails before the component runs, with
    /// `INVALID_ARGS` (the model's arguments are at fault, not the tool).
    /// Default 1 MiB; set it at or above the component's own limit (the
    /// tool's is 256 KiB, so its own `INVALID_ARGS` names that one).
    pub max_arguments_bytes: usize,
    /// Times one call may ask the human ([`AskLimits::max_asks`]). Default 1:
    /// the tool asks one batch per call.
    pub max_asks_per_call: u32,
    /// Largest request a component may send, in bytes
    /// ([`AskLimits::max_request_bytes`]). Default 1 MiB; the tool's own
    /// argument limits keep its requests under 300 KiB.
    pub max_request_bytes: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cpu_deadline: Duration::from_secs(1),
            memory_cap: 32 << 20,
            max_concurrent_calls: 250,
            max_waiting_calls: 10_000,
            max_output_bytes: 4 << 20,
            max_arguments_bytes: 1 << 20,
            max_asks_per_call: 1,
            max_request_bytes: ask_user_seam::limits::DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

impl RuntimeConfig {
    /// What one call of the component may put in front of the human.
    pub fn ask_limits(&self) -> AskLimits {
        AskLimits {
            max_asks: self.max_asks_per_call,
            max_request_bytes: self.max_request_bytes,
        }
    }
}

/// The tool's definition, as the component states it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Value,
}

/// A loaded tool component, ready for calls from many tasks at once.
pub struct ToolRuntime {
    engine: Engine,
    pre: ToolPre<CallState>,
    seam: Arc<UserQuestions>,
    config: RuntimeConfig,
    definition: ToolDefinition,
    /// One permit per run of the component that may be under way at once.
    runs: Arc<Semaphore>,
    /// One permit per call that may be under way at once.
    calls: Arc<Semaphore>,
}

impl ToolRuntime {
    /// Compiles `component` (the bytes of a `.wasm` component) on the
    /// process's shared [`Engine`] and prepares it to ask through `seam`.
    pub async fn new(
        component: &[u8],
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        Self::with_engine(Engine::shared()?, component, seam, config).await
    }

    /// As [`new`](Self::new), on `engine`.
    pub async fn with_engine(
        engine: &Engine,
        component: &[u8],
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        let component = Component::new(engine.wasmtime(), component)
            .map_err(|e| e.context("the file is not a valid component"))?;
        Self::prepare(engine.clone(), component, seam, config).await
    }

    /// As [`with_engine`](Self::with_engine), keeping the compiled component
    /// in `cache` (and loading it from there when a checked entry is there).
    pub async fn with_cache(
        engine: &Engine,
        component: &[u8],
        cache: &CodeCache,
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        let component = cache
            .load(engine, component)
            .map_err(|e| e.context("the file is not a valid component"))?;
        Self::prepare(engine.clone(), component, seam, config).await
    }

    /// Loads a component that [`Engine::precompile`] produced on an engine of
    /// the same configuration, skipping compilation.
    ///
    /// # Safety
    /// `precompiled` is machine code that is run as is: it must come from
    /// `precompile` on a trusted path, never from the model, a peer or any
    /// writable location an attacker could reach.
    pub async unsafe fn from_precompiled(
        engine: &Engine,
        precompiled: &[u8],
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        // SAFETY: the caller vouches for the bytes, as documented above.
        let component = unsafe { Component::deserialize(engine.wasmtime(), precompiled)? };
        Self::prepare(engine.clone(), component, seam, config).await
    }

    async fn prepare(
        engine: Engine,
        component: Component,
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        let mut linker = Linker::<CallState>::new(engine.wasmtime());
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        contract::add_to_linker(&mut linker)?;
        let pre = ToolPre::new(&linker, &component)?;
        let definition = read_definition(&engine, &pre, &seam, &config).await?;
        Ok(ToolRuntime {
            runs: Arc::new(Semaphore::new(config.max_concurrent_calls as usize)),
            calls: Arc::new(Semaphore::new(config.max_waiting_calls as usize)),
            engine,
            pre,
            seam,
            config,
            definition,
        })
    }

    /// The tool's name, description and schemas.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The version of the contract the component was built for.
    pub fn version(&self) -> Version {
        self.pre.version()
    }

    /// The seam the component asks through.
    pub fn seam(&self) -> &Arc<UserQuestions> {
        &self.seam
    }

    /// Runs one tool call for `caller` within the turn's `signal`. Never
    /// fails: every failure, the guest's included, is an error result.
    pub async fn call(
        &self,
        caller: &AgentHandle,
        signal: &CancellationToken,
        arguments: &str,
    ) -> ToolResult {
        // A call in a turn already cancelled runs nothing, as a harness
        // dispatches no cancelled call: it is `ASK_ABORTED`, whatever its
        // arguments (SPEC §1).
        if signal.is_cancelled() {
            let aborted = AskError::aborted();
            return ToolResult::failure(aborted.name(), aborted.code().cloned(), aborted.message());
        }
        if arguments.len() > self.config.max_arguments_bytes {
            // Copied into the component, they would only hit its memory cap
            // and blame the tool.
            return ToolResult::coded(
                ErrorCode::InvalidArgs,
                &format!(
                    "invalid arguments: they are {} bytes, over the host's limit of {} bytes; \
                     ask fewer or shorter questions and call again",
                    arguments.len(),
                    self.config.max_arguments_bytes
                ),
            );
        }
        let Ok(_call) = self.calls.try_acquire() else {
            return busy(&format!(
                "this host takes at most {} calls of the tool at once",
                self.config.max_waiting_calls
            ));
        };
        // The call's CPU time, over all its runs.
        let clock = CpuClock::new();
        let mut replay = Replay::new();
        loop {
            let run = self.run_slot().await;
            let ask = AskContext::new(
                self.seam.clone(),
                Some(caller.clone()),
                signal.clone(),
                self.config.ask_limits(),
            )
            .replaying(replay);
            let mut store = new_store(&self.engine, &self.config, ask, clock.clone());
            let outcome = clock
                .measure(Box::pin(async {
                    let tool = self.pre.instantiate(&mut store).await?;
                    tool.execute(&mut store, arguments).await
                }))
                .await;
            let waiting = match &outcome {
                Err(error) if error.is::<Suspended>() => {
                    store.into_data().into_ask().into_waiting()
                }
                _ => None,
            };
            let Some((log, waiting)) = waiting else {
                return match outcome {
                    Ok(Ok(output)) => self.success(output),
                    Ok(Err(failure)) => {
                        ToolResult::failure(failure.name, failure.code, &failure.message)
                    }
                    Err(error) => sandbox_failure(&error),
                };
            };
            // The instance is gone; nothing of the component is held while
            // the human answers.
            drop(run);
            let (request, answered) = waiting.await;
            replay = log;
            replay.record(request, answered);
        }
    }

    /// What one run holds: a run of this runtime and a slot of the engine's
    /// pool, once both are free (runs take microseconds, at most the CPU
    /// deadline).
    async fn run_slot(&self) -> (SemaphorePermit<'_>, Option<OwnedSemaphorePermit>) {
        let run = self
            .runs
            .acquire()
            .await
            .expect("the runs are never closed");
        (run, self.engine.slot().await)
    }

    fn success(&self, output: ToolOutput) -> ToolResult {
        let structured = serde_json::json!({ "answers": output.answers });
        let size = output.text.len() + crate::contract::json_len(&structured);
        if size > self.config.max_output_bytes {
            return ToolResult::coded(
                ErrorCode::GuestOutputTooLarge,
                &format!(
                    "the tool's result is {size} bytes, over the host's limit of {} bytes; it was \
                     dropped. Ask for shorter answers",
                    self.config.max_output_bytes
                ),
            );
        }
        ToolResult::success(output.text, structured)
    }
}

/// A store for one call: its state, memory cap and CPU deadline.
fn new_store(
    engine: &Engine,
    config: &RuntimeConfig,
    ask: AskContext,
    clock: Arc<CpuClock>,
) -> Store<CallState> {
    let state = CallState::new(ask, clock, config.cpu_deadline, config.memory_cap);
    let mut store = Store::new(engine.wasmtime(), state);
    store.limiter(CallState::limiter);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut store| store.data_mut().on_epoch());
    store
}

/// Reads the definition, as an agentless caller allowed no ask: loading a
/// component never puts anything in front of the human.
async fn read_definition(
    engine: &Engine,
    pre: &ToolPre<CallState>,
    seam: &Arc<UserQuestions>,
    config: &RuntimeConfig,
) -> wasmtime::Result<ToolDefinition> {
    let ask = AskContext::new(
        seam.clone(),
        None,
        CancellationToken::new(),
        AskLimits::NONE,
    );
    let clock = CpuClock::new();
    let mut store = new_store(engine, config, ask, clock.clone());
    let raw: RawDefinition = clock
        .measure(Box::pin(async {
            let tool = pre.instantiate(&mut store).await?;
            tool.definition(&mut store).await
        }))
        .await
        .map_err(|error| {
            let why = match stopped_by(&error) {
                Some((_, why)) => why,
                None => format!("{error:#}"),
            };
            wasmtime::format_err!("the component failed while it was being loaded: {why}")
        })?;
    let schema = |what: &str, text: &str| {
        serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                wasmtime::format_err!("the component's {what} schema is not a JSON object")
            })
    };
    Ok(ToolDefinition {
        input_schema: schema("input", &raw.input_schema)?,
        output_schema: schema("output", &raw.output_schema)?,
        name: raw.name,
        description: raw.description,
    })
}

fn busy(why: &str) -> ToolResult {
    ToolResult::coded(
        ErrorCode::HostBusy,
        &format!("the host is busy: {why}. Try again shortly"),
    )
}

/// Why the sandbox or the contract stopped a call, when one of them did:
/// its code and what it says.
fn stopped_by(error: &wasmtime::Error) -> Option<(ErrorCode, String)> {
    if let Some(breach) = error.downcast_ref::<Breach>() {
        return Some((breach.code(), breach.to_string()));
    }
    let refusal = error.downcast_ref::<Refusal>()?;
    Some((refusal.code(), refusal.to_string()))
}

/// Names what went wrong while the component was started or run: a breach
/// of the sandbox by its own code, a pool with no free slot (`HOST_BUSY`),
/// else a trap of the component.
fn sandbox_failure(error: &wasmtime::Error) -> ToolResult {
    if error
        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        return busy("every instance slot of the engine's pool is in use");
    }
    let (code, message) = match stopped_by(error) {
        Some((code, why)) => (code, format!("{why}; the call was stopped")),
        None => (
            ErrorCode::GuestTrapped,
            format!("the tool component failed: {error:#}"),
        ),
    };
    ToolResult::coded(
        code,
        &format!(
            "{message}. This is a fault of the tool, not of your call; do not retry it unchanged"
        ),
    )
}

/// The `[sandbox]` table of the config file: the limits on the component,
/// each above zero, the others at their defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    cpu_deadline: Option<String>,
    memory_cap: Option<usize>,
    max_arguments_bytes: Option<usize>,
    max_asks_per_call: Option<u32>,
    max_request_bytes: Option<usize>,
    max_output_bytes: Option<usize>,
    max_concurrent_calls: Option<u32>,
    max_waiting_calls: Option<u32>,
}

impl SandboxSettings {
    /// The default limits with these set; each must be above zero.
    pub fn apply(self) -> Result<RuntimeConfig, String> {
        fn set<T: Default + PartialEq>(
            name: &str,
            value: Option<T>,
            limit: &mut T,
        ) -> Result<(), String> {
            match value {
                Some(value) if value == T::default() => {
                    Err(format!("sandbox `{name}` must be above zero"))
                }
                Some(value) => {
                    *limit = value;
                    Ok(())
                }
                None => Ok(()),
            }
        }
        let mut config = RuntimeConfig::default();
        let deadline = self
            .cpu_deadline
            .as_deref()
            .map(ask_user_seam::config::duration)
            .transpose()?;
        set("cpu_deadline", deadline, &mut config.cpu_deadline)?;
        set("memory_cap", self.memory_cap, &mut config.memory_cap)?;
        set(
            "max_arguments_bytes",
            self.max_arguments_bytes,
            &mut config.max_arguments_bytes,
        )?;
        set(
            "max_asks_per_call",
            self.max_asks_per_call,
            &mut config.max_asks_per_call,
        )?;
        set(
            "max_request_bytes",
            self.max_request_bytes,
            &mut config.max_request_bytes,
        )?;
        set(
            "max_output_bytes",
            self.max_output_bytes,
            &mut config.max_output_bytes,
        )?;
        set(
            "max_concurrent_calls",
            self.max_concurrent_calls,
            &mut config.max_concurrent_calls,
        )?;
        set(
            "max_waiting_calls",
            self.max_waiting_calls,
            &mut config.max_waiting_calls,
        )?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_breach_keeps_its_own_code() {
        let breaches = [
            (
                Breach::Deadline(Duration::from_secs(1)),
                "GUEST_DEADLINE_EXCEEDED",
            ),
            (
                Breach::Memory { cap: 1, desired: 2 },
                "GUEST_MEMORY_EXCEEDED",
            ),
        ]
        .map(|(breach, code)| (wasmtime::Error::new(breach), code));
        let refusals = [
            (Refusal::TooManyAsks(1), "GUEST_TOO_MANY_ASKS"),
            (
                Refusal::RequestTooLarge { size: 2, limit: 1 },
                "GUEST_REQUEST_TOO_LARGE",
            ),
            (
                Refusal::Violation("a label of 0 characters".into()),
                "GUEST_CONTRACT_VIOLATION",
            ),
        ]
        .map(|(refusal, code)| (wasmtime::Error::new(refusal), code));
        for (error, code) in breaches.into_iter().chain(refusals) {
            // As instantiation or a call reports it: wrapped in context.
            let error = error.context("while instantiating");
            let result = sandbox_failure(&error);
            assert_eq!(result.code(), Some(code));
            assert!(
                result.text().contains("fault of the tool"),
                "{}",
                result.text()
            );
        }
    }

    #[test]
    fn a_trap_or_a_failed_start_is_a_trap_of_the_tool() {
        let trap = wasmtime::Error::new(wasmtime::Trap::UnreachableCodeReached);
        assert_eq!(sandbox_failure(&trap).code(), Some("GUEST_TRAPPED"));
        let other = wasmtime::format_err!("a start function failed");
        assert_eq!(sandbox_failure(&other).code(), Some("GUEST_TRAPPED"));
    }
}
