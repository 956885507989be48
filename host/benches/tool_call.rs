//! Prints what loading and calling the tool component costs on this machine,
//! against the same mapping done in plain native Rust.
//!
//! `cargo bench -p ask-user --bench tool_call`

use std::sync::Arc;
use std::time::{Duration, Instant};

use ask_user::answerers::script::ScriptAnswerer;
use ask_user::{
    AgentRegistry, Engine, EngineConfig, Placement, RuntimeConfig, ToolRuntime, UserQuestions,
};
use tokio_util::sync::CancellationToken;

const ARGUMENTS: &str = include_str!("../../examples/deploy.json");
const ANSWERS: &str = include_str!("../../examples/deploy.answers.json");

struct Figures {
    median: Duration,
    p99: Duration,
}

fn figures(mut samples: Vec<Duration>) -> Figures {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Figures {
        median: at(0.5),
        p99: at(0.99),
    }
}

fn print(what: &str, f: &Figures) {
    println!(
        "{what:<52} median {:>11.3?}   p99 {:>11.3?}",
        f.median, f.p99
    );
}

fn seam() -> (Arc<UserQuestions>, Arc<AgentRegistry>) {
    let agents = Arc::new(AgentRegistry::new());
    let seam = UserQuestions::new(agents.clone());
    seam.waterfall().register(
        ScriptAnswerer::from_json(ANSWERS).unwrap(),
        Placement::default(),
    );
    (Arc::new(seam), agents)
}

async fn sample<F: std::future::Future>(runs: usize, mut once: impl FnMut() -> F) -> Figures {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let output = once().await;
        samples.push(start.elapsed());
        // Dropped outside the measured time (a runtime's teardown is not its load).
        drop(output);
    }
    figures(samples)
}

/// Loading code that `precompile` made, on `engine`.
async fn load_precompiled(engine: &Engine, config: &RuntimeConfig) -> Figures {
    let precompiled = engine.precompile(ask_user::COMPONENT).unwrap();
    sample(50, || async {
        let (seam, _) = seam();
        // SAFETY: produced by `precompile` just above.
        unsafe {
            ToolRuntime::from_precompiled(engine, &precompiled, seam, config.clone())
                .await
                .unwrap()
        }
    })
    .await
}

#[tokio::main]
async fn main() {
    let config = RuntimeConfig::default();
    let component = ask_user::COMPONENT;
    println!(
        "component: {} bytes; arguments: examples/deploy.json (3 questions)\n",
        component.len()
    );

    let compile = sample(10, || async {
        let (seam, _) = seam();
        ToolRuntime::new(component, seam, config.clone())
            .await
            .unwrap()
    })
    .await;
    print("load: compile + prepare + read definition", &compile);
    let shared = Engine::shared().unwrap();
    let precompiled = load_precompiled(shared, &config).await;
    print(
        "load: precompiled + prepare + read definition",
        &precompiled,
    );
    let one_slot = Engine::new(&EngineConfig {
        pool_slots: 1,
        ..EngineConfig::default()
    })
    .unwrap();
    let precompiled_one = load_precompiled(&one_slot, &config).await;
    print(
        "  the same on an engine whose pool has 1 slot, not 128",
        &precompiled_one,
    );

    let (seam, agents) = seam();
    let runtime = ToolRuntime::new(component, seam, config.clone())
        .await
        .unwrap();
    let root = agents.register_root("bench", None);
    let signal = CancellationToken::new();
    for _ in 0..200 {
        runtime.call(&root, &signal, ARGUMENTS).await;
    }
    let trivial = sample(5_000, || runtime.call(&root, &signal, "{}")).await;
    print(
        "instantiate + call rejected at once (INVALID_ARGS)",
        &trivial,
    );
    let answered = sample(5_000, || async {
        let result = runtime.call(&root, &signal, ARGUMENTS).await;
        assert!(!result.is_error);
    })
    .await;
    print(
        "whole tool call, answered by the script answerer",
        &answered,
    );

    let canned: serde_json::Value = serde_json::from_str(ANSWERS).unwrap();
    let canned: Vec<ask_user::Answer> = serde_json::from_value(canned["answers"].clone()).unwrap();
    let native = sample(5_000, || async {
        // The same work natively: parse and check, map to the seam, answer
        // from the script, check and render.
        let (_, text) = ask_user_tool::execute(ARGUMENTS, |request| {
            Ok(request
                .questions
                .iter()
                .map(|q| {
                    let a = canned.iter().find(|a| a.id == q.id).cloned().unwrap();
                    ask_user_tool::seam::Answer {
                        id: a.id,
                        selected: a.selected,
                        custom: a.custom,
                    }
                })
                .collect())
        })
        .unwrap();
        std::hint::black_box(text);
    })
    .await;
    print(
        "the same mapping in native Rust (no sandbox, no seam)",
        &native,
    );
    println!(
        "\nratio, whole call / native mapping: median {:.1}x, p99 {:.1}x",
        answered.median.as_secs_f64() / native.median.as_secs_f64(),
        answered.p99.as_secs_f64() / native.p99.as_secs_f64()
    );
    println!(
        "ratio, compile / precompiled load: median {:.0}x",
        compile.median.as_secs_f64() / precompiled.median.as_secs_f64()
    );
}
