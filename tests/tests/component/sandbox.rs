//! The sandbox: a component that misbehaves gets a clear error each time,
//! and the host keeps serving.

use std::sync::Arc;
use std::time::Duration;

use ask_user::{AgentRegistry, RuntimeConfig, ToolResult, ToolRuntime, UserQuestions};
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
    let component = std::fs::read(ask_user_tests::MISBEHAVE).unwrap();
    let agents = Arc::new(AgentRegistry::new());
    let seam = UserQuestions::new(agents.clone());
    let (answerer, probe) = TestAnswerer::new(answerer);
    seam.waterfall().register(answerer, Default::default());
    let runtime = ToolRuntime::new(&component, Arc::new(seam), config)
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
        "1048576",
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
async fn calls_beyond_the_pool_are_refused_not_queued_forever() {
    let busy = RuntimeConfig {
        max_concurrent_calls: 1,
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
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = m.call("wasi").await;
    assert_sandbox_error(&second, "HOST_BUSY", "at most 1 calls");
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

#[test]
fn the_tool_component_stays_well_under_100_kb() {
    let size = ask_user::COMPONENT.len();
    assert!(size < 80 * 1024, "the component is {size} bytes");
}
