//! The sandbox: a component that misbehaves gets a clear error each time,
//! and the host keeps serving.

use std::sync::Arc;
use std::time::Duration;

use ask_user::contract::Version;
use ask_user::wasmtime::Store;
use ask_user::wasmtime::component::{Component, Linker};
use ask_user::{
    AgentRegistry, Engine, EngineConfig, RuntimeConfig, ToolResult, ToolRuntime, UserQuestions,
};
use ask_user_tests::{Behaviour, Probe, TestAnswerer};
use tokio_util::sync::CancellationToken;

struct Misbehaving {
    runtime: ToolRuntime,
    agents: Arc<AgentRegistry>,
    /// What the seam's one answerer saw.
    probe: Arc<Probe>,
}

fn config() -> RuntimeConfig {
    RuntimeConfig {
        cpu_deadline: Duration::from_millis(200),
        memory_cap: 16 << 20,
        max_concurrent_calls: 2,
        ..RuntimeConfig::default()
    }
}

async fn misbehaving(answerer: Behaviour, config: RuntimeConfig) -> Misbehaving {
    misbehaving_on(Engine::shared().unwrap(), answerer, config).await
}

async fn misbehaving_on(
    engine: &Engine,
    answerer: Behaviour,
    config: RuntimeConfig,
) -> Misbehaving {
    let component = std::fs::read(ask_user_tests::MISBEHAVE).unwrap();
    let agents = Arc::new(AgentRegistry::new());
    let seam = UserQuestions::new(agents.clone());
    let (answerer, probe) = TestAnswerer::new(answerer);
    seam.waterfall().register(answerer, Default::default());
    let runtime = ToolRuntime::with_engine(engine, &component, Arc::new(seam), config)
        .await
        .unwrap();
    Misbehaving {
        runtime,
        agents,
        probe,
    }
}

impl Misbehaving {
    async fn call(&self, misbehaviour: &str) -> ToolResult {
        let root = self.agents.register_root("root", None);
        self.runtime
            .call(&root, &CancellationToken::new(), misbehaviour)
            .await
    }
}

/// An engine whose pool has one instance slot.
fn one_slot_engine() -> Engine {
    Engine::new(&EngineConfig {
        pool_slots: 1,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// Waits until `free` slots of `engine`'s pool are free: nothing announces
/// it, so the executor is given turns, no time, for at most 60 s.
async fn until_slots_free(engine: &Engine, free: usize, what: &str) {
    let start = std::time::Instant::now();
    while engine.slots_free() != Some(free) {
        assert!(start.elapsed() < Duration::from_secs(60), "{what}");
        tokio::task::yield_now().await;
    }
}

fn assert_sandbox_error(result: &ToolResult, code: &str, says: &str) {
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.error.as_ref().unwrap().name, "ToolSandboxError");
    assert_eq!(result.code(), Some(code), "{}", result.text());
    assert!(result.text().contains(says), "{}", result.text());
}

#[tokio::test]
async fn an_endless_loop_hits_the_cpu_deadline() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    assert_sandbox_error(&m.call("loop").await, "GUEST_DEADLINE_EXCEEDED", "200ms");
}

#[tokio::test]
async fn growing_memory_hits_the_cap() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    assert_sandbox_error(&m.call("grow").await, "GUEST_MEMORY_EXCEEDED", "16777216");
}

#[tokio::test]
async fn a_trap_is_reported() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    assert_sandbox_error(
        &m.call("trap").await,
        "GUEST_TRAPPED",
        "the tool component failed",
    );
}

#[tokio::test]
async fn oversized_output_is_dropped() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    assert_sandbox_error(
        &m.call("big-output").await,
        "GUEST_OUTPUT_TOO_LARGE",
        "4194304",
    );
}

#[tokio::test]
async fn a_request_that_breaks_the_contract_is_never_answered() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    let result = m.call("bad-extra-json").await;
    assert_sandbox_error(&result, "GUEST_CONTRACT_VIOLATION", "extra-json");
    assert_eq!(m.probe.calls(), 0);
}

#[tokio::test]
async fn a_component_may_not_stage_a_plan_review() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    for (misbehaviour, field) in [("set-detail", "`detail`"), ("set-intent", "`intent`")] {
        let result = m.call(misbehaviour).await;
        assert_sandbox_error(&result, "GUEST_CONTRACT_VIOLATION", field);
        assert!(
            result.text().contains("only the host's own askers"),
            "{}",
            result.text()
        );
    }
    assert_eq!(m.probe.calls(), 0, "no answerer saw the staged review");
}

#[tokio::test]
async fn loading_a_component_allows_no_ask() {
    let component = std::fs::read(ask_user_tests::ASKS_ON_LOAD).unwrap();
    let seam = UserQuestions::new(Arc::new(AgentRegistry::new()));
    let (answerer, probe) = TestAnswerer::new(Behaviour::ClaimFirst);
    seam.waterfall().register(answerer, Default::default());
    let error = match ToolRuntime::new(&component, Arc::new(seam), config()).await {
        Err(error) => format!("{error:#}"),
        Ok(_) => panic!("a component that asks while loading was loaded"),
    };
    assert!(error.contains("while it was being loaded"), "{error}");
    assert_eq!(probe.calls(), 0, "the ask reached an answerer");
}

#[tokio::test]
async fn a_full_engine_pool_is_busy_and_frees_up() {
    let engine = one_slot_engine();
    let m = misbehaving_on(&engine, Behaviour::ClaimFirst, config()).await;
    let root = m.agents.register_root("root", None);
    // An instance of another component on the same engine takes the slot.
    let empty = Component::new(engine.wasmtime(), wat::parse_str("(component)").unwrap()).unwrap();
    let mut store = Store::new(engine.wasmtime(), ());
    let held = Linker::new(engine.wasmtime())
        .instantiate_async(&mut store, &empty)
        .await
        .unwrap();
    // The runtime would allow two runs; the engine's one slot is taken.
    let second = m
        .runtime
        .call(&root, &CancellationToken::new(), "wasi")
        .await;
    assert_sandbox_error(
        &second,
        "HOST_BUSY",
        "every instance slot of the engine's pool",
    );
    assert_eq!(m.probe.calls(), 0);
    drop((held, store));
    let third = m
        .runtime
        .call(&root, &CancellationToken::new(), "wasi")
        .await;
    assert_eq!(third.text(), "env=0 args=0 root=false tmp=false");
}

/// Two runtimes share an engine of one slot: a call answered while the
/// other runtime's run holds the slot waits for it, and loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_run_again_waits_for_a_slot_taken_by_another_runtime() {
    let engine = one_slot_engine();
    let waits = Arc::new(
        misbehaving_on(
            &engine,
            Behaviour::FailOnAbort(|| {
                ask_user::AskError::new(ask_user::ErrorCode::AskAborted, "aborted").into()
            }),
            config(),
        )
        .await,
    );
    let signal = CancellationToken::new();
    let waiting = {
        let (waits, signal) = (waits.clone(), signal.clone());
        let root = waits.agents.register_root("waits", None);
        tokio::spawn(async move { waits.runtime.call(&root, &signal, "ask").await })
    };
    waits.probe.wait_for_calls(1).await;
    // Its run ends at the ask (the answerer was asked during it): a waiting
    // call holds no slot.
    until_slots_free(&engine, 1, "the waiting call kept its slot").await;
    // The other runtime's run loops until its CPU deadline, holding the slot.
    let busy = Arc::new(misbehaving_on(&engine, Behaviour::ClaimFirst, config()).await);
    let looping = tokio::spawn(async move { busy.call("loop").await });
    until_slots_free(&engine, 0, "the loop never ran").await;
    // The answer comes now (the turn is aborted: the component returns).
    signal.cancel();
    assert_eq!(waiting.await.unwrap().text(), "asked");
    assert_sandbox_error(
        &looping.await.unwrap(),
        "GUEST_DEADLINE_EXCEEDED",
        "CPU deadline",
    );
}

#[tokio::test]
async fn a_memory_cap_below_the_components_own_memory_is_named_at_load() {
    let seam = Arc::new(UserQuestions::new(Arc::new(AgentRegistry::new())));
    let tiny = RuntimeConfig {
        memory_cap: 64 << 10,
        ..config()
    };
    let error = match ToolRuntime::new(ask_user::COMPONENT, seam, tiny).await {
        Err(error) => format!("{error:#}"),
        Ok(_) => panic!("loaded within 64 KiB"),
    };
    assert!(error.contains("over its cap of 65536 bytes"), "{error}");
    assert!(!error.contains("busy"), "{error}");
}

#[tokio::test]
async fn a_component_of_an_unknown_contract_version_is_named() {
    let seam = Arc::new(UserQuestions::new(Arc::new(AgentRegistry::new())));
    let future = wat::parse_str(
        r#"(component
            (instance $tool)
            (export "dsh:ask-user/tool@0.9.0" (instance $tool)))"#,
    )
    .unwrap();
    let error = match ToolRuntime::new(&future, seam.clone(), config()).await {
        Err(error) => format!("{error:#}"),
        Ok(_) => panic!("an unknown version loaded"),
    };
    assert!(
        error.contains(
            "exports dsh:ask-user/tool@0.9.0, a version this host does not know; it loads 0.1.0"
        ),
        "{error}"
    );
    let nothing = wat::parse_str("(component)").unwrap();
    let error = match ToolRuntime::new(&nothing, seam, config()).await {
        Err(error) => format!("{error:#}"),
        Ok(_) => panic!("an empty component loaded"),
    };
    assert!(
        error.contains("does not export the dsh:ask-user/tool interface (it exports: nothing)"),
        "{error}"
    );
}

#[tokio::test]
async fn the_contract_version_is_read_from_the_component() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    assert_eq!(m.runtime.version(), Version::V0_1_0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_calls_under_load_stay_within_a_tight_cpu_deadline() {
    // Two threads that keep both cores busy, and 64 calls at once: each
    // call waits for a core far longer than the deadline, but uses a
    // fraction of a millisecond of CPU.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burners: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::black_box(());
                }
            })
        })
        .collect();
    let tight = RuntimeConfig {
        cpu_deadline: Duration::from_millis(20),
        max_concurrent_calls: 64,
        ..RuntimeConfig::default()
    };
    let h = Arc::new(ask_user_tests::Harness::with_config(tight).await);
    h.answerer(Behaviour::ClaimFirst);
    let calls: Vec<_> = (0..64)
        .map(|n| {
            let h = h.clone();
            tokio::spawn(async move {
                let agent = h.agents.register_root(format!("agent-{n}"), None);
                h.call_as(&agent, ask_user_tests::one_question(&["A", "B"]))
                    .await
            })
        })
        .collect();
    let mut failed = Vec::new();
    for call in calls {
        let result = call.await.unwrap();
        if result.is_error {
            failed.push(result.text().to_owned());
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for burner in burners {
        burner.join().unwrap();
    }
    assert!(
        failed.is_empty(),
        "{} calls failed, e.g. {:?}",
        failed.len(),
        failed.first()
    );
}

#[tokio::test]
async fn a_second_ask_in_one_call_never_reaches_the_human() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    let result = m.call("ask-twice").await;
    assert_sandbox_error(&result, "GUEST_TOO_MANY_ASKS", "more than the 1 time(s)");
    assert_eq!(m.probe.calls(), 1, "only the first ask was answered");
}

#[tokio::test]
async fn a_host_may_allow_more_asks_per_call() {
    let two = RuntimeConfig {
        max_asks_per_call: 2,
        ..config()
    };
    let m = misbehaving(Behaviour::ClaimFirst, two).await;
    let result = m.call("ask-twice").await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(m.probe.calls(), 2);
}

#[tokio::test]
async fn a_call_whose_asks_both_wait_runs_again_after_each_and_asks_each_once() {
    let two = RuntimeConfig {
        max_asks_per_call: 2,
        ..config()
    };
    // Each answer comes later: the call runs three times in all.
    let m = misbehaving(Behaviour::Slow(Duration::from_millis(10)), two).await;
    let result = m.call("ask-twice").await;
    assert!(!result.is_error, "{result:?}");
    let seen: Vec<_> = m
        .probe
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|request| request.questions[0].question.clone())
        .collect();
    assert_eq!(seen, ["Once?", "And again?"]);
}

#[tokio::test]
async fn an_oversized_request_never_reaches_the_human() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    // 2 MiB of question text; then 100,000 options with empty labels, whose
    // text is nearly nothing but whose count is not free.
    for (misbehaviour, size) in [("huge-request", "2097185"), ("many-options", "3200039")] {
        let result = m.call(misbehaviour).await;
        assert_sandbox_error(&result, "GUEST_REQUEST_TOO_LARGE", size);
        assert!(result.text().contains("limit of 1048576 bytes"));
    }
    assert_eq!(m.probe.calls(), 0);
}

#[tokio::test]
async fn the_host_keeps_serving_after_every_misbehaviour() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    for misbehaviour in [
        "loop",
        "grow",
        "trap",
        "big-output",
        "bad-extra-json",
        "ask-twice",
        "huge-request",
        "loop",
    ] {
        assert!(m.call(misbehaviour).await.is_error);
        let honest = m.call("ask").await;
        assert!(!honest.is_error, "after {misbehaviour}: {honest:?}");
        assert_eq!(honest.text(), "asked");
    }
}

#[tokio::test]
async fn waiting_on_the_human_is_not_cpu_time() {
    let tight = RuntimeConfig {
        cpu_deadline: Duration::from_millis(30),
        ..config()
    };
    let m = misbehaving(Behaviour::Slow(Duration::from_millis(400)), tight).await;
    let result = m.call("ask").await;
    assert!(!result.is_error, "{result:?}");
}

#[tokio::test]
async fn the_component_sees_no_environment_arguments_or_files() {
    let m = misbehaving(Behaviour::ClaimFirst, config()).await;
    let result = m.call("wasi").await;
    assert_eq!(result.text(), "env=0 args=0 root=false tmp=false");
}

#[tokio::test]
async fn a_call_waiting_for_the_human_holds_no_instance() {
    // An engine of one instance slot: three calls wait on it, one by one,
    // and a fourth runs.
    let engine = one_slot_engine();
    let m = Arc::new(misbehaving_on(&engine, Behaviour::Hang, config()).await);
    let signal = CancellationToken::new();
    let mut waiting = Vec::new();
    for n in 0..3 {
        let (call, signal) = (m.clone(), signal.clone());
        waiting.push(tokio::spawn(async move {
            let root = call.agents.register_root(format!("waits-{n}"), None);
            call.runtime.call(&root, &signal, "ask").await
        }));
        m.probe.wait_for_calls(n + 1).await;
        // Asked during its run, the call then ends the run: the slot frees.
        until_slots_free(&engine, 1, "a waiting call kept its instance").await;
    }
    assert_eq!(
        m.call("wasi").await.text(),
        "env=0 args=0 root=false tmp=false"
    );
    signal.cancel();
    for call in waiting {
        assert_eq!(
            call.await.unwrap().text(),
            "asked",
            "each guest, run again, got ASK_ABORTED from the seam and returned"
        );
    }
    assert_eq!(m.probe.calls(), 3, "a run again never asks the answerers");
}

#[tokio::test]
async fn calls_beyond_the_waiting_cap_are_refused_not_queued_forever() {
    let busy = RuntimeConfig {
        max_waiting_calls: 1,
        ..config()
    };
    let m = Arc::new(misbehaving(Behaviour::Hang, busy).await);
    let signal = CancellationToken::new();
    let first = {
        let (m, signal) = (m.clone(), signal.clone());
        tokio::spawn(async move {
            let root = m.agents.register_root("first", None);
            m.runtime.call(&root, &signal, "ask").await
        })
    };
    m.probe.wait_for_calls(1).await;
    let second = m.call("ask").await;
    assert_sandbox_error(&second, "HOST_BUSY", "at most 1 calls of the tool at once");
    assert_eq!(m.probe.calls(), 1, "the refused call reached no answerer");
    signal.cancel();
    let first = first.await.unwrap();
    assert_eq!(
        first.text(),
        "asked",
        "the guest got ASK_ABORTED from the seam and returned"
    );
    assert_eq!(
        m.call("wasi").await.text(),
        "env=0 args=0 root=false tmp=false"
    );
}

#[tokio::test]
async fn a_component_that_asks_something_else_when_run_again_is_stopped() {
    let m = misbehaving(Behaviour::Slow(Duration::from_millis(20)), config()).await;
    let result = m.call("ask-random").await;
    assert_sandbox_error(
        &result,
        "GUEST_CONTRACT_VIOLATION",
        "it asked something else when run again (ask 1 of the call)",
    );
    assert_eq!(m.probe.calls(), 1);
    // Answered at once, a call is not run again: the same misbehaviour passes.
    let at_once = misbehaving(Behaviour::ClaimFirst, config()).await;
    assert_eq!(at_once.call("ask-random").await.text(), "asked");
}

#[tokio::test]
async fn a_file_that_is_not_a_component_is_a_clear_load_error() {
    let seam = Arc::new(UserQuestions::new(Arc::new(AgentRegistry::new())));
    let error = match ToolRuntime::new(b"not wasm at all", seam.clone(), config()).await {
        Err(error) => format!("{error:#}"),
        Ok(_) => panic!("garbage loaded"),
    };
    assert!(error.contains("not a valid component"), "{error}");
    // A core module is not a component either.
    let error = match ToolRuntime::new(b"\0asm\x01\0\0\0", seam, config()).await {
        Err(error) => format!("{error:#}"),
        Ok(_) => panic!("a core module loaded"),
    };
    assert!(error.contains("not a valid component"), "{error}");
}

#[test]
fn the_tool_component_imports_nothing_but_the_seam() {
    let engine = ask_user::wasmtime::Engine::default();
    let component =
        ask_user::wasmtime::component::Component::new(&engine, ask_user::COMPONENT).unwrap();
    let imports: Vec<String> = component
        .component_type()
        .imports(&engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    assert_eq!(
        imports,
        [
            "dsh:ask-user/types@0.1.0",
            "dsh:ask-user/user-questions@0.1.0"
        ],
        "no WASI, no files, no clock, no random: only the seam"
    );
}

/// Built at opt-level 3 (docs/src/performance.md): 94 KB; "s" saves 11 KB
/// and costs about 2 µs a call, a seventh of the call's sandbox overhead.
#[test]
fn the_tool_component_stays_under_100_kb() {
    let size = ask_user::COMPONENT.len();
    assert!(size < 100 * 1000, "the component is {size} bytes");
}
