//! Running the tool component: one engine, the component compiled once and
//! pre-instantiated, one store per call, with a CPU deadline and a memory cap.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

use crate::agents::AgentHandle;
use crate::bindings::{self, AskUserTool, AskUserToolPre};
use crate::sandbox::{Breach, CallState};
use crate::seam::UserQuestions;
use crate::tool_result::ToolResult;

/// The error name of results the sandbox produces (codes `GUEST_*`).
pub const SANDBOX_ERROR: &str = "ToolSandboxError";

/// How often the engine's epoch advances: the granularity of the CPU deadline.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The limits of the sandbox. Every one is per call unless it says otherwise.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// CPU time a call may spend inside the component, not counting time
    /// waiting on the human. Past it: `GUEST_DEADLINE_EXCEEDED`. Default 1 s;
    /// honest calls take well under a millisecond. Measured in [`EPOCH_TICK`]s.
    pub cpu_deadline: Duration,
    /// Linear memory a call may use, in bytes. Past it:
    /// `GUEST_MEMORY_EXCEEDED`. Default 32 MiB.
    pub memory_cap: usize,
    /// Calls that may run at once (slots of the pooling allocator). One more
    /// fails with `HOST_BUSY`. Default 64.
    pub max_concurrent_calls: u32,
    /// Largest result the component may return (text plus answers), in
    /// bytes. Past it: `GUEST_OUTPUT_TOO_LARGE`. Default 1 MiB.
    pub max_output_bytes: usize,
    /// Largest arguments the host passes into the component, in bytes.
    /// Past it the call fails before the component runs, with
    /// `INVALID_ARGS` (the model's arguments are at fault, not the tool).
    /// Default 1 MiB; set it at or above the component's own limit (the
    /// tool's is 256 KiB, so its own `INVALID_ARGS` names that one).
    pub max_arguments_bytes: usize,
    /// Times one call may ask the human; every ask counts, answered or not.
    /// Past it: `GUEST_TOO_MANY_ASKS`, and no answerer sees the extra
    /// request. Default 1: the tool asks one batch per call.
    pub max_asks_per_call: u32,
    /// Largest request a component may send, in bytes: all its text (ids,
    /// questions, details, headers, labels, descriptions, option extras,
    /// intent labels) plus 32 for each question and each option. Past it:
    /// `GUEST_REQUEST_TOO_LARGE`, and no answerer sees it. Default 1 MiB; the
    /// tool's own argument limits keep its requests under 300 KiB.
    pub max_request_bytes: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cpu_deadline: Duration::from_secs(1),
            memory_cap: 32 << 20,
            max_concurrent_calls: 64,
            max_output_bytes: 1 << 20,
            max_arguments_bytes: 1 << 20,
            max_asks_per_call: 1,
            max_request_bytes: 1 << 20,
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
    sandbox: Sandbox,
    definition: ToolDefinition,
    _ticker: EpochTicker,
}

/// What every call's store is made from.
struct Sandbox {
    engine: Engine,
    pre: AskUserToolPre<CallState>,
    seam: Arc<UserQuestions>,
    config: RuntimeConfig,
}

impl ToolRuntime {
    /// Compiles `component` (the bytes of a `.wasm` component) and prepares
    /// it to ask through `seam`.
    pub async fn new(
        component: &[u8],
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        let engine = engine(&config)?;
        let component = Component::new(&engine, component)
            .map_err(|e| e.context("the file is not a valid component"))?;
        Self::prepare(engine, component, seam, config).await
    }

    /// The component compiled for this host, for [`from_precompiled`](Self::from_precompiled).
    pub fn precompile(component: &[u8], config: &RuntimeConfig) -> wasmtime::Result<Vec<u8>> {
        engine(config)?.precompile_component(component)
    }

    /// Loads a component that [`precompile`](Self::precompile) produced with
    /// the same configuration, skipping compilation.
    ///
    /// # Safety
    /// `precompiled` is machine code that is run as is: it must come from
    /// `precompile` on a trusted path, never from the model, a peer or any
    /// writable location an attacker could reach.
    pub async unsafe fn from_precompiled(
        precompiled: &[u8],
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        let engine = engine(&config)?;
        // SAFETY: the caller vouches for the bytes, as documented above.
        let component = unsafe { Component::deserialize(&engine, precompiled)? };
        Self::prepare(engine, component, seam, config).await
    }

    async fn prepare(
        engine: Engine,
        component: Component,
        seam: Arc<UserQuestions>,
        config: RuntimeConfig,
    ) -> wasmtime::Result<Self> {
        let mut linker = Linker::<CallState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        AskUserTool::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(
            &mut linker,
            |state| state,
        )?;
        let pre = AskUserToolPre::new(linker.instantiate_pre(&component)?).map_err(|e| {
            e.context("the component does not have the ask-user-tool world of dsh:ask-user@0.1.0")
        })?;
        let ticker = EpochTicker::start(engine.clone());
        let sandbox = Sandbox {
            engine,
            pre,
            seam,
            config,
        };
        Ok(ToolRuntime {
            definition: sandbox.definition().await?,
            sandbox,
            _ticker: ticker,
        })
    }

    /// The tool's name, description and schemas.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// The seam the component asks through.
    pub fn seam(&self) -> &Arc<UserQuestions> {
        &self.sandbox.seam
    }

    /// Runs one tool call for `caller` within the turn's `signal`. Never
    /// fails: every failure, the guest's included, is an error result.
    pub async fn call(
        &self,
        caller: &AgentHandle,
        signal: &CancellationToken,
        arguments: &str,
    ) -> ToolResult {
        self.sandbox.call(caller, signal, arguments).await
    }
}

impl Sandbox {
    async fn definition(&self) -> wasmtime::Result<ToolDefinition> {
        let (mut store, tool) = self.instantiate(None, CancellationToken::new()).await?;
        let definition = tool.dsh_ask_user_tool().call_definition(&mut store).await?;
        let schema = |what: &str, text: &str| {
            serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| {
                    wasmtime::format_err!("the component's {what} schema is not a JSON object")
                })
        };
        Ok(ToolDefinition {
            input_schema: schema("input", &definition.input_schema)?,
            output_schema: schema("output", &definition.output_schema)?,
            name: definition.name,
            description: definition.description,
        })
    }

    async fn call(
        &self,
        caller: &AgentHandle,
        signal: &CancellationToken,
        arguments: &str,
    ) -> ToolResult {
        if arguments.len() > self.config.max_arguments_bytes {
            // Copied into the component, they would only hit its memory cap
            // and blame the tool.
            return ToolResult::failure(
                "InvalidArgumentsError",
                Some("INVALID_ARGS".to_owned()),
                &format!(
                    "invalid arguments: they are {} bytes, over the host's limit of {} bytes; \
                     ask fewer or shorter questions and call again",
                    arguments.len(),
                    self.config.max_arguments_bytes
                ),
            );
        }
        let (mut store, tool) = match self.instantiate(Some(caller.clone()), signal.clone()).await {
            Ok(instance) => instance,
            Err(error) => {
                return ToolResult::failure(
                    SANDBOX_ERROR,
                    Some("HOST_BUSY".to_owned()),
                    &format!(
                        "the host could not start the tool ({error:#}); at most {} calls run at \
                         once. Try again shortly",
                        self.config.max_concurrent_calls
                    ),
                );
            }
        };
        let outcome = tool
            .dsh_ask_user_tool()
            .call_execute(&mut store, arguments)
            .await;
        match outcome {
            Ok(Ok(output)) => self.success(output),
            Ok(Err(failure)) => ToolResult::failure(failure.name, failure.code, &failure.message),
            Err(trap) => sandbox_failure(&trap),
        }
    }

    fn success(&self, output: bindings::tool::ToolOutput) -> ToolResult {
        let answers: Vec<_> = output
            .answers
            .into_iter()
            .map(bindings::answer_from_wit)
            .collect();
        let structured = serde_json::json!({ "answers": answers });
        let size = output.text.len() + structured.to_string().len();
        if size > self.config.max_output_bytes {
            return ToolResult::failure(
                SANDBOX_ERROR,
                Some("GUEST_OUTPUT_TOO_LARGE".to_owned()),
                &format!(
                    "the tool's result is {size} bytes, over the host's limit of {} bytes; it was \
                     dropped. Ask for shorter answers",
                    self.config.max_output_bytes
                ),
            );
        }
        ToolResult::success(output.text, structured)
    }

    async fn instantiate(
        &self,
        caller: Option<AgentHandle>,
        signal: CancellationToken,
    ) -> wasmtime::Result<(Store<CallState>, AskUserTool)> {
        let state = CallState::new(self.seam.clone(), caller, signal, &self.config);
        let mut store = Store::new(&self.engine, state);
        store.limiter(CallState::limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut store| store.data_mut().on_epoch());
        let tool = self.pre.instantiate_async(&mut store).await?;
        Ok((store, tool))
    }
}

/// Names what went wrong inside the guest.
fn sandbox_failure(trap: &wasmtime::Error) -> ToolResult {
    let (code, message) = match trap.downcast_ref::<Breach>() {
        Some(breach) => (breach.code(), format!("{breach}; the call was stopped")),
        None => (
            "GUEST_TRAPPED",
            format!("the tool component failed: {trap:#}"),
        ),
    };
    ToolResult::failure(
        SANDBOX_ERROR,
        Some(code.to_owned()),
        &format!(
            "{message}. This is a fault of the tool, not of your call; do not retry it unchanged"
        ),
    )
}

fn engine(config: &RuntimeConfig) -> wasmtime::Result<Engine> {
    let slots = config.max_concurrent_calls;
    let mut pool = PoolingAllocationConfig::default();
    // A Rust wasip2 component instantiates a few core modules (its code and
    // the shims that wire WASI), each with at most a memory and a table.
    pool.total_component_instances(slots)
        .total_core_instances(slots * 8)
        .total_memories(slots * 2)
        .total_tables(slots * 8)
        .total_stacks(slots)
        .max_memory_size(config.memory_cap);
    let mut wasm = Config::new();
    wasm.wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&wasm)
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped.
struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    fn start(engine: Engine) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ask-user-epoch".to_owned())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    // Parked rather than asleep, so that dropping stops it at once.
                    std::thread::park_timeout(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .expect("spawning the epoch thread");
        EpochTicker {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}
