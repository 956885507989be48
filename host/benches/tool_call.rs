//! What loading and calling the tool component costs on this machine, side
//! by side with the same work done natively, and what a thousand waiting
//! asks weigh. Figures, ratios and the goals they are held to are printed;
//! nothing here is a timed test.
//!
//! `cargo bench -p ask-user --bench tool_call`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ask_user::answerers::script::ScriptAnswerer;
use ask_user::wasmtime::Store;
use ask_user::wasmtime::component::{Component, Linker, ResourceTable, Val};
use ask_user::{
    AgentHandle, AgentRegistry, AnswerFuture, Answerer, Ask, AskRequest, CodeCache, Engine,
    ErrorCode, Next, Placement, Question, QuestionOption, RuntimeConfig, ToolResult, ToolRuntime,
    UserQuestions,
};
use ask_user_tool::args::Arguments;
use ask_user_tool::output::Output;
use tokio_util::sync::CancellationToken;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

const ARGUMENTS: &str = include_str!("../../examples/deploy.json");
const ANSWERS: &str = include_str!("../../examples/deploy.answers.json");
const PENDING_ASKS: usize = 10_000;

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
        "  {what:<56} median {:>10.2?}   p99 {:>10.2?}",
        f.median, f.p99
    );
}

fn ratio(what: &str, a: &Figures, b: &Figures, goal: Option<f64>) {
    let median = a.median.as_secs_f64() / b.median.as_secs_f64();
    let p99 = a.p99.as_secs_f64() / b.p99.as_secs_f64();
    let verdict = match goal {
        Some(goal) if median <= goal => format!("   goal <= {goal}x: met"),
        Some(goal) => format!("   goal <= {goal}x: NOT met"),
        None => String::new(),
    };
    println!("  {what:<56} median {median:>6.1}x   p99 {p99:>6.1}x{verdict}");
}

async fn sample<F: std::future::Future>(runs: usize, mut once: impl FnMut() -> F) -> Figures {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let output = once().await;
        samples.push(start.elapsed());
        // Dropped outside the measured time.
        drop(output);
    }
    figures(samples)
}

/// A seam answered by the script answerer.
fn seam() -> (Arc<UserQuestions>, Arc<AgentRegistry>) {
    seam_answered_by(ScriptAnswerer::from_json(ANSWERS).unwrap())
}

fn seam_answered_by(answerer: impl Answerer) -> (Arc<UserQuestions>, Arc<AgentRegistry>) {
    let agents = Arc::new(AgentRegistry::new());
    let seam = UserQuestions::new(agents.clone());
    seam.waterfall().register(answerer, Placement::default());
    (Arc::new(seam), agents)
}

/// Whole calls of the example, each checked to succeed.
async fn whole_calls(
    runtime: &ToolRuntime,
    root: &AgentHandle,
    signal: &CancellationToken,
) -> Figures {
    sample(5_000, || async {
        let result = runtime.call(root, signal, ARGUMENTS).await;
        assert!(!result.is_error, "{}", result.text());
    })
    .await
}

/// The tool's work natively, with the same seam work as the host does for
/// the component: parse and check the arguments, ask through the same
/// `UserQuestions` (caller check, waterfall, script, answer checks), check
/// and render the output, build the same result.
async fn native_call(
    seam: &UserQuestions,
    caller: &AgentHandle,
    signal: &CancellationToken,
    arguments: &str,
) -> ToolResult {
    let arguments = match Arguments::parse(arguments) {
        Ok(arguments) => arguments,
        Err(error) => return ToolResult::coded(ErrorCode::InvalidArgs, &error.to_string()),
    };
    let request = arguments.to_request();
    let asked = AskRequest {
        questions: request.questions.iter().map(to_host).collect(),
    };
    let answers = match seam.ask(asked, Some(caller), signal).await {
        Ok(answers) => answers,
        Err(error) => return ToolResult::failure("UserQuestionError", None, error.message()),
    };
    let answers = answers
        .into_iter()
        .map(|a| ask_user_tool::seam::Answer {
            id: a.id,
            selected: a.selected,
            custom: a.custom,
        })
        .collect();
    let output = Output::from_answers(&request.questions, answers).unwrap();
    let text = output.render();
    ToolResult::success(text, serde_json::to_value(&output).unwrap())
}

fn to_host(q: &ask_user_tool::seam::Question) -> Question {
    let mut question = Question::new(q.id.clone(), q.question.clone());
    question.header = q.header.clone();
    question.multi_select = q.multi_select;
    question.options = q.options.as_ref().map(|options| {
        options
            .iter()
            .map(|o| {
                let mut option = QuestionOption::new(o.label.clone());
                option.description = o.description.clone();
                if let Some(extra) = &o.extra_json {
                    option.extra = serde_json::from_str(extra).unwrap();
                }
                option
            })
            .collect()
    });
    question
}

/// Store and instantiation alone, in `engine`, of `component` with every
/// import a trap: the floor any call of it pays.
async fn bare_instantiate(engine: &Engine, component: &Component) -> Figures {
    let mut linker = Linker::<()>::new(engine.wasmtime());
    linker.define_unknown_imports_as_traps(component).unwrap();
    let pre = linker.instantiate_pre(component).unwrap();
    sample(5_000, || async {
        let mut store = Store::new(engine.wasmtime(), ());
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = pre.instantiate_async(&mut store).await.unwrap();
        (instance, store)
    })
    .await
}

/// The state a composed component's store holds: WASI p2, whose
/// environment carries the answers.
struct Wasi {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Wasi {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// Whole calls of the tool composed with the answers plug, as a runtime
/// that brings no seam runs it: WASI p2 from wasmtime-wasi, a store and an
/// instance a call, in `engine`; each checked to answer.
async fn composed_calls(engine: &Engine, composed: &[u8]) -> Figures {
    let mut linker = Linker::<Wasi>::new(engine.wasmtime());
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).unwrap();
    let component = Component::new(engine.wasmtime(), composed).unwrap();
    let pre = linker.instantiate_pre(&component).unwrap();
    let call = || async {
        let ctx = WasiCtxBuilder::new()
            .env("ASK_USER_ANSWERS", ANSWERS)
            .build();
        let mut store = Store::new(
            engine.wasmtime(),
            Wasi {
                ctx,
                table: ResourceTable::new(),
            },
        );
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = pre.instantiate_async(&mut store).await.unwrap();
        let tool = instance
            .get_export_index(&mut store, None, "dsh:ask-user/tool@0.1.0")
            .unwrap();
        let execute = instance
            .get_export_index(&mut store, Some(&tool), "execute")
            .unwrap();
        let execute = instance.get_func(&mut store, execute).unwrap();
        let mut results = [Val::Bool(false)];
        execute
            .call_async(&mut store, &[Val::String(ARGUMENTS.into())], &mut results)
            .await
            .unwrap();
        assert!(
            matches!(&results[0], Val::Result(Ok(_))),
            "{:?}",
            results[0]
        );
        (results, store)
    };
    for _ in 0..500 {
        call().await;
    }
    sample(5_000, call).await
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no memory effects.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64
}

/// Answers as the script does, after yielding once: the seam cannot answer
/// at once, so the call takes the path of a human's answer (the run ends at
/// the ask, and the call runs again with the answer).
struct AfterAYield(ScriptAnswerer);

impl Answerer for AfterAYield {
    fn name(&self) -> &str {
        "after-a-yield"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            self.0.answer(ask, next).await
        })
    }
}

/// Holds every ask until the turn is cancelled; `all` is told once
/// [`PENDING_ASKS`] have arrived.
struct Holds {
    arrived: AtomicUsize,
    all: Arc<tokio::sync::Notify>,
}

impl Answerer for Holds {
    fn name(&self) -> &str {
        "holds"
    }

    fn answer<'a>(&'a self, _: &'a Ask, _: Next<'a>) -> AnswerFuture<'a> {
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 == PENDING_ASKS {
            self.all.notify_one();
        }
        Box::pin(std::future::pending())
    }
}

#[tokio::main]
async fn main() {
    let config = RuntimeConfig::default();
    let component = ask_user::COMPONENT;
    println!(
        "component: {} bytes; arguments: examples/deploy.json (3 questions)\n",
        component.len()
    );
    let engine = Engine::shared().unwrap();

    println!("Loading");
    let compile = sample(10, || async {
        ToolRuntime::new(component, seam().0, config.clone())
            .await
            .unwrap()
    })
    .await;
    print("compile + prepare + read definition", &compile);
    let dir = tempfile::tempdir().unwrap();
    let cache = CodeCache::at(dir.path()).unwrap();
    let cached = sample(50, || async {
        ToolRuntime::with_cache(engine, component, &cache, seam().0, config.clone())
            .await
            .unwrap()
    })
    .await;
    print(
        "from the code cache (checked) + prepare + definition",
        &cached,
    );
    ratio("compile / code cache", &compile, &cached, None);

    let binary = env!("CARGO_BIN_EXE_ask-user");
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let cli = || {
        let status = std::process::Command::new(binary)
            .args(["ask", "--answers", "deploy.answers.json", "deploy.json"])
            .current_dir(examples)
            .env("XDG_CACHE_HOME", dir.path())
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    };
    cli(); // fills the cache
    let process = sample(30, || async { cli() }).await;
    print("`ask-user ask --answers` as a process, wall", &process);
    let verdict = if process.median <= Duration::from_millis(15) {
        "met"
    } else {
        "NOT met"
    };
    println!("  {:<56} goal <= 15 ms: {verdict}", "");

    println!("\nCalls (one engine, its pool warm)");
    let (seam, agents) = seam();
    let runtime = ToolRuntime::new(component, seam.clone(), config.clone())
        .await
        .unwrap();
    let root = agents.register_root("bench", None);
    let signal = CancellationToken::new();
    for _ in 0..500 {
        runtime.call(&root, &signal, ARGUMENTS).await;
        native_call(&seam, &root, &signal, ARGUMENTS).await;
    }
    let empty = Component::new(engine.wasmtime(), wat::parse_str("(component)").unwrap()).unwrap();
    let tool = Component::new(engine.wasmtime(), component).unwrap();
    let bare_empty = bare_instantiate(engine, &empty).await;
    print("bare store + instantiate, empty component", &bare_empty);
    let bare_tool = bare_instantiate(engine, &tool).await;
    print("bare store + instantiate, the tool component", &bare_tool);
    let rejected = sample(5_000, || runtime.call(&root, &signal, "{}")).await;
    print(
        "instantiate + call rejected at once (INVALID_ARGS)",
        &rejected,
    );
    let answered = whole_calls(&runtime, &root, &signal).await;
    print(
        "whole tool call, answered by the script answerer",
        &answered,
    );
    let native = sample(5_000, || async {
        let result = native_call(&seam, &root, &signal, ARGUMENTS).await;
        assert!(!result.is_error);
    })
    .await;
    print("the same natively, through the same seam", &native);
    let composed = ask_user::plugs::compose(
        component,
        ask_user::plugs::Plug::Answers,
        ask_user::plugs::Face::Tool,
        "",
    )
    .unwrap();
    let foreign = composed_calls(engine, &composed).await;
    print(
        "whole call of the tool composed with the answers plug",
        &foreign,
    );
    let (later, agents) =
        seam_answered_by(AfterAYield(ScriptAnswerer::from_json(ANSWERS).unwrap()));
    let replaying = ToolRuntime::new(component, later, config.clone())
        .await
        .unwrap();
    let replayed = whole_calls(&replaying, &agents.register_root("bench", None), &signal).await;
    print(
        "whole call answered later: run to the ask, run again",
        &replayed,
    );
    let seam_alone = sample(5_000, || async {
        let request = AskRequest {
            questions: Arguments::parse(ARGUMENTS)
                .unwrap()
                .to_request()
                .questions
                .iter()
                .map(to_host)
                .collect(),
        };
        let start = Instant::now();
        seam.ask(request, Some(&root), &signal).await.unwrap();
        start.elapsed()
    });
    let seam_alone = seam_alone.await;
    print(
        "  of which the seam's ask (script answerer, checks)",
        &seam_alone,
    );
    println!();
    ratio(
        "whole call / native (same seam work)",
        &answered,
        &native,
        Some(3.0),
    );
    ratio(
        "composed with the answers plug / our host's whole call",
        &foreign,
        &answered,
        Some(1.5),
    );
    let kb = composed.len() as f64 / 1000.0;
    let verdict = if kb <= 300.0 { "met" } else { "NOT met" };
    println!(
        "  {:<56} {kb:>6.0} KB   goal <= 300 KB: {verdict}",
        "the tool composed with the answers plug, size"
    );
    ratio(
        "answered later (run again) / answered at once",
        &replayed,
        &answered,
        None,
    );
    println!(
        "  {:<56} median {:>10.2?}",
        "  the extra cost of an answer that comes later",
        replayed.median.saturating_sub(answered.median)
    );
    ratio(
        "call rejected at once / bare instantiate, the tool",
        &rejected,
        &bare_tool,
        Some(3.0),
    );
    ratio(
        "call rejected at once / bare instantiate, empty component",
        &rejected,
        &bare_empty,
        None,
    );
    ratio(
        "  bare instantiate: the tool / an empty component",
        &bare_tool,
        &bare_empty,
        None,
    );
    println!(
        "  {:<56}",
        "  (the goal as first filed, 2x an empty component, is below"
    );
    println!(
        "  {:<56}",
        "  the tool's bare instantiation: its memory and 3 modules)"
    );

    let rest = answered
        .median
        .saturating_sub(native.median)
        .saturating_sub(bare_tool.median);
    println!("\nWhere a whole call's median goes (from the figures above):");
    let line = |what: &str, time: Duration| println!("  {what:<56} {time:>10.2?}");
    line("instantiate (bare, the tool component)", bare_tool.median);
    line(
        "the seam's ask (caller, waterfall, script, answer checks)",
        seam_alone.median,
    );
    line(
        "the tool's own work, natively (parse, check, render)",
        native.median.saturating_sub(seam_alone.median),
    );
    line(
        "the rest: the tool's code in wasm beyond its native time,",
        rest,
    );
    println!(
        "  {:<56}",
        "  crossing the seam (copies), the store, the result"
    );

    println!(
        "\n{PENDING_ASKS} asks waiting at once (one host on the default engine: a waiting call holds no instance)"
    );
    let all_arrived = Arc::new(tokio::sync::Notify::new());
    let (waiting, agents) = seam_answered_by(Holds {
        arrived: AtomicUsize::new(0),
        all: all_arrived.clone(),
    });
    let runtime = Arc::new(
        ToolRuntime::new(component, waiting, config.clone())
            .await
            .unwrap(),
    );
    let root = agents.register_root("bench", None);
    let turn = CancellationToken::new();
    let before = rss();
    let calls: Vec<_> = (0..PENDING_ASKS)
        .map(|_| {
            let (runtime, root, turn) = (runtime.clone(), root.clone(), turn.clone());
            tokio::spawn(async move { runtime.call(&root, &turn, ARGUMENTS).await })
        })
        .collect();
    tokio::time::timeout(Duration::from_secs(60), all_arrived.notified())
        .await
        .expect("the asks all arrive");
    let grown = rss().saturating_sub(before);
    turn.cancel();
    let mut busy = 0;
    for call in calls {
        let result = call.await.unwrap();
        busy += usize::from(result.code() == Some("HOST_BUSY"));
        assert_eq!(
            result.code().filter(|c| *c != "HOST_BUSY"),
            Some("ASK_ABORTED")
        );
    }
    let mib = grown as f64 / (1 << 20) as f64;
    let verdict = if mib <= 256.0 && busy == 0 {
        "met"
    } else {
        "NOT met"
    };
    println!(
        "  {PENDING_ASKS} pending asks: {mib:.1} MiB (RSS growth), {:.1} KiB each; HOST_BUSY: {busy}; goal <= 256 MiB, none busy: {verdict}",
        grown as f64 / 1024.0 / PENDING_ASKS as f64
    );
}
