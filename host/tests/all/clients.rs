//! `ask-user mcp` in the clients people use, each pointed at a model server
//! of ours (`support/fake_model.rs`) that calls the tool with the book's
//! example batch: Claude Code 2.1.328, Codex 0.169.0 and Gemini CLI
//! 0.61.0 from npm (`host/tests/npm`). In each TUI (driven in a pty) the
//! person fills in the form, and the model receives exactly their answers.
//! Headless runs (`claude -p`, `codex exec`) show no form, so `[mcp] forms
//! = "never"` hands the questions to the config's own answerers; Gemini CLI
//! shows no MCP forms at all, and its questions go to the inbox.

use ask_user_test_support::child;
use ask_user_test_support::fake_model;
use ask_user_test_support::npm;
use ask_user_test_support::tui;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use fake_model::FakeModel;
use serde_json::{Value, json};
use tui::Tui;

/// The longest a client run may take.
pub(crate) const BOUND: Duration = Duration::from_secs(180);

/// One client at a time: each starts a client's TUI, an MCP server and
/// hooks, and eight at once on a 2-core machine starve each other.
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The book's example batch, and the answers the script gives it.
pub(crate) fn deploy() -> (Value, Value) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(examples.join(name)).unwrap()).unwrap()
    };
    (read("deploy.json"), read("deploy.answers.json"))
}

/// A folder for one client run: a home of its own, and the ask-user config
/// (headless: the script answerer and no forms; else none).
pub(crate) fn run_folder(headless: bool) -> (tempfile::TempDir, PathBuf) {
    // Outside the repository: a client treats a folder in a Git project
    // as that project.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("home")).unwrap();
    let answers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/deploy.answers.json");
    let config = dir.path().join("ask-user.toml");
    let text = match headless {
        true => format!(
            "[mcp]\nforms = \"never\"\n\n[[answerer]]\nkind = \"script\"\nanswers = {:?}\n",
            answers.display().to_string()
        ),
        false => String::new(),
    };
    std::fs::write(&config, text).unwrap();
    (dir, config)
}

/// What the person answers in each TUI below.
fn tui_answers() -> Value {
    json!({"answers": [
        {"id": "target", "selected": ["Staging (Recommended)"]},
        {"id": "checks", "selected": ["Unit tests", "Load test"]},
        {"id": "note", "selected": [], "custom": "Mention retries"},
    ]})
}

const DOWN: &str = "\x1b[B";
const UP: &str = "\x1b[A";
const RIGHT: &str = "\x1b[C";
const LEFT: &str = "\x1b[D";

/// Claude Code's settings for a run with our model: onboarding done, the
/// folder trusted, the test's API key approved.
fn claude_home(home: &Path, folder: &Path, key: &str) {
    let settings = json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [key], "rejected": []},
        "projects": {folder.display().to_string(): {"hasTrustDialogAccepted": true}},
    });
    std::fs::write(home.join(".claude.json"), settings.to_string()).unwrap();
}

/// The environment that points Claude Code at `model`, and nowhere else.
fn claude_env(model: &FakeModel) -> Vec<(&'static str, String)> {
    vec![
        ("ANTHROPIC_BASE_URL", format!("http://{}", model.address)),
        ("ANTHROPIC_API_KEY", "sk-test".to_owned()),
        // MCP tools in the request itself, not behind a tool search.
        ("ENABLE_TOOL_SEARCH", "false".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("DISABLE_ERROR_REPORTING", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
    ]
}

/// `config.toml` for Codex with our model as its provider, and `dir/home`
/// trusted.
fn codex_home(dir: &Path, model: &FakeModel) -> PathBuf {
    let codex_home = dir.join("codex");
    std::fs::create_dir(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"test-model\"\nmodel_provider = \"test\"\n\n\
             [model_providers.test]\nname = \"test\"\nbase_url = \"http://{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"TEST_MODEL_KEY\"\n\n\
             [projects.{:?}]\ntrust_level = \"trusted\"\n",
            model.address,
            dir.join("home").display().to_string(),
        ),
    )
    .unwrap();
    codex_home
}

/// Codex's `-c` overrides that register `ask-user mcp --config config`, as
/// the book does: required, or Codex (0.147 and later) gives the server a
/// second to start and runs the turn without its tool; and a day for a
/// call, or Codex ends it after 60 s ("timed out awaiting tools/call").
fn codex_server(config: &Path) -> [String; 8] {
    [
        "-c".to_owned(),
        format!(
            "mcp_servers.ask-user.command={:?}",
            env!("CARGO_BIN_EXE_ask-user")
        ),
        "-c".to_owned(),
        format!(
            "mcp_servers.ask-user.args=[\"mcp\",\"--config\",{:?}]",
            config.display().to_string()
        ),
        "-c".to_owned(),
        "mcp_servers.ask-user.required=true".to_owned(),
        "-c".to_owned(),
        "mcp_servers.ask-user.tool_timeout_sec=86400".to_owned(),
    ]
}

/// The result the model received, checked against `expected`.
fn assert_received(model: &FakeModel, wait: Duration, expected: &Value) {
    let result = model
        .tool_result(wait)
        .expect("the model got the tool's result (or the client never had the tool)");
    assert_eq!(
        &serde_json::from_str::<Value>(&result).unwrap_or_else(|e| panic!("{e}: {result}")),
        expected,
        "{result}"
    );
}

/// The tool as Claude Code names it: what `--allowedTools` must name.
const CLAUDE_TOOL: &str = "mcp__ask-user__ask_user_question";

/// `dir/mcp.json`, for Claude Code's `--mcp-config`: `ask-user mcp` with
/// `config`.
fn claude_mcp(dir: &Path, config: &Path) -> PathBuf {
    let servers = json!({"mcpServers": {"ask-user": {
        "command": env!("CARGO_BIN_EXE_ask-user"),
        "args": ["mcp", "--config", config]}}});
    let mcp = dir.join("mcp.json");
    std::fs::write(&mcp, servers.to_string()).unwrap();
    mcp
}

/// Claude Code's TUI with `ask-user mcp` (no config answerers) and our
/// model, which calls the tool with the example batch at once.
fn claude_tui(model: &FakeModel) -> (Tui, tempfile::TempDir) {
    let (dir, config) = run_folder(false);
    let home = dir.path().join("home");
    claude_home(&home, &home, "sk-test");
    let mcp = claude_mcp(dir.path(), &config);
    let mut env = claude_env(model);
    env.push(("HOME", home.display().to_string()));
    env.push(("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR").to_owned()));
    let args = [
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--allowedTools",
        CLAUDE_TOOL,
    ];
    (claude_in(dir.path(), &env, &args), dir)
}

#[test]
fn claude_code_shows_the_batch_as_one_form_and_the_model_gets_the_answers() {
    let _one = one_at_a_time();
    let model = FakeModel::start(deploy().0);
    let (tui, _dir) = claude_tui(&model);
    let form = tui.wait_for(&["requests your input", "Accept"], BOUND);
    // Every question, in order, with the recommended choice made.
    let order: Vec<usize> = [
        "Staging (Recommended): Safe to try",
        "Where should this release be deployed?",
        "Deploy: or in your own words",
        "Which checks should run before deploying?",
        "Checks: or in your own words",
        "Anything the release note should mention?",
    ]
    .iter()
    .map(|text| {
        form.find(text)
            .unwrap_or_else(|| panic!("no {text:?} in:\n{form}"))
    })
    .collect();
    assert!(order.is_sorted(), "out of order:\n{form}");
    // Two of the checks; the own words left empty.
    tui.keys(&format!("{DOWN}{DOWN}{RIGHT}"));
    tui.wait_for(
        &["☐ Unit tests", "☐ Load test: Takes about 20 minutes."],
        BOUND,
    );
    tui.keys(" ");
    tui.wait_for(&["☒ Unit tests"], BOUND);
    tui.keys(&format!("{DOWN}{DOWN} "));
    tui.wait_for(&["☒ Load test"], BOUND);
    tui.keys(LEFT);
    tui.wait_for(&["Checks: ▸ Unit tests, Load test"], BOUND);
    tui.keys(&format!("{DOWN}{DOWN}"));
    tui.wait_for(&["Note: Type something"], BOUND);
    tui.keys("Mention retries");
    tui.wait_for(&["Note: Mention retries"], BOUND);
    tui.keys(DOWN);
    tui.wait_for(&["❯ Accept"], BOUND);
    // The model's last word, once it has the answers.
    tui.press("\r", &[fake_model::DONE], BOUND);
    assert_received(&model, Duration::ZERO, &tui_answers());
}

/// Codex's TUI with `ask-user mcp` (no config answerers) and our model,
/// which calls the tool with the example batch at once.
fn codex_tui(model: &FakeModel) -> (Tui, tempfile::TempDir) {
    let npm = npm::folder();
    let (dir, config) = run_folder(false);
    let home = dir.path().join("home");
    let codex_home = codex_home(dir.path(), model);
    let server = codex_server(&config);
    let mut args: Vec<&str> = server.iter().map(String::as_str).collect();
    args.push("Deploy the release");
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("CODEX_HOME", codex_home.to_str().unwrap()),
        ("TEST_MODEL_KEY", "test"),
        ("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR")),
    ];
    let tui = Tui::start(&npm.join("node_modules/.bin/codex"), &args, &home, &env);
    (tui, dir)
}

#[test]
fn codex_shows_the_batch_in_order_with_a_field_per_option_and_the_model_gets_the_answers() {
    let _one = one_at_a_time();
    let model = FakeModel::start(deploy().0);
    let (tui, _dir) = codex_tui(&model);
    // One field at a time, in question order; each option a yes or no.
    tui.wait_for(
        &[
            "Field 1/8",
            "Where should this release be deployed?",
            "Staging (Recommended): Safe to try",
        ],
        BOUND,
    );
    tui.press("\r", &["Field 2/8", "Deploy: or in your own words"], BOUND);
    // An empty text field is passed with ^N in Codex.
    tui.press("\x0e", &["Field 3/8", "Checks: Unit tests"], BOUND);
    tui.press(UP, &["› 1. True"], BOUND);
    tui.press("\r", &["Field 4/8", "Checks: Integration tests"], BOUND);
    tui.press(
        "\r",
        &["Field 5/8", "Checks: Load test", "Takes about 20 minutes."],
        BOUND,
    );
    tui.press(UP, &["› 1. True"], BOUND);
    tui.press("\r", &["Field 6/8", "Checks: or in your own words"], BOUND);
    tui.press(
        "\x0e",
        &["Field 7/8", "Anything the release note should mention?"],
        BOUND,
    );
    tui.keys("Mention retries");
    tui.wait_for(&["Mention retries"], BOUND);
    // Last, a choice, never a text field Codex cannot leave empty.
    tui.press("\r", &["Field 8/8", "Send these answers"], BOUND);
    tui.press("\r", &[fake_model::DONE], BOUND);
    assert_received(&model, Duration::ZERO, &tui_answers());
}

/// Claude Code's own question (two of them, one a multi-select), with the
/// answers the model claims the user gave, which must never pass.
fn own_questions() -> Value {
    json!({
        "questions": [
            {"question": "Where should this release be deployed?", "header": "Deploy",
             "multiSelect": false, "options": [
                {"label": "Staging", "description": "Safe to try."},
                {"label": "Production", "description": "Users get it now."}]},
            {"question": "Which checks should run before deploying?", "header": "Checks",
             "multiSelect": true, "options": [
                {"label": "Unit tests", "description": "Fast."},
                {"label": "Load test", "description": "Slow."}]},
        ],
        "answers": {"Where should this release be deployed?": "Production"},
    })
}

/// A home for Claude Code with the hook installed as the book says and
/// `config` as the user's ask-user config, with the environment that runs
/// Claude Code there (its state folder and settings are in the folder).
fn hooked_home(
    model: &FakeModel,
    config: &str,
) -> (tempfile::TempDir, Vec<(&'static str, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".config/ask-user")).unwrap();
    std::fs::write(home.join(".config/ask-user/config.toml"), config).unwrap();
    std::fs::create_dir(dir.path().join("state")).unwrap();
    let installed = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args(["hook", "install", "claude-code", "--settings"])
        .arg(home.join(".claude/settings.json"))
        .env("ASK_USER_STATE_DIR", dir.path().join("state"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .status()
        .unwrap();
    assert!(installed.success());
    claude_home(&home, &home, "sk-test");
    let mut env = claude_env(model);
    env.push(("HOME", home.display().to_string()));
    env.push((
        "XDG_CONFIG_HOME",
        home.join(".config").display().to_string(),
    ));
    env.push(("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR").to_owned()));
    let state = dir.path().join("state").display().to_string();
    env.push(("ASK_USER_STATE_DIR", state));
    (dir, env)
}

/// A config whose script answers [`own_questions`].
const SCRIPTED: &str = "[[answerer]]\nkind = \"script\"\nrules = [\n  \
                        { id = \"q1\", select = [\"Staging\"] },\n  \
                        { id = \"q2\", select = [\"Unit tests\", \"Load test\"] },\n]\n";

/// The model got [`SCRIPTED`]'s answers, and none of its own.
fn assert_scripted(model: &FakeModel) {
    let result = received(model);
    assert!(
        result.contains(r#""Where should this release be deployed?"="Staging""#)
            && result
                .contains(r#""Which checks should run before deploying?"="Unit tests, Load test""#),
        "{result}"
    );
}

/// The tool result the model got (the run is over).
fn received(model: &FakeModel) -> String {
    model
        .tool_result(Duration::ZERO)
        .expect("the model got a result")
}

/// Claude Code in `dir/home` with `env` and `args` after the prompt.
fn claude_in(dir: &Path, env: &[(&str, String)], args: &[&str]) -> Tui {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut all = vec!["Deploy the release", "--permission-mode", "default"];
    all.extend_from_slice(args);
    Tui::start(
        &npm::folder().join("node_modules/.bin/claude"),
        &all,
        &dir.join("home"),
        &env,
    )
}

/// Claude Code in `dir/home` with `env` and ask-user's MCP server, which
/// has no answerers of its own: a form is the client's, its tool allowed.
fn claude_with_our_server(dir: &Path, env: &[(&str, String)]) -> Tui {
    let empty = dir.join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let mcp = claude_mcp(dir, &empty);
    let args = [
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--allowedTools",
        CLAUDE_TOOL,
    ];
    claude_in(dir, env, &args)
}

/// Claude Code's TUI with the hook installed ([`hooked_home`]).
fn claude_with_hook(model: &FakeModel, config: &str) -> (Tui, tempfile::TempDir) {
    let (dir, env) = hooked_home(model, config);
    (claude_in(dir.path(), &env, &[]), dir)
}

/// Claude Code's own question tool, answered through the hook that
/// `ask-user hook install claude-code` adds, from the user's config (a
/// script here): the model gets exactly those answers, never the ones it put
/// in its own call; `uninstall` takes the hook out again.
#[test]
fn claude_codes_own_question_is_answered_through_the_installed_hook() {
    let _one = one_at_a_time();
    let model = FakeModel::calling("AskUserQuestion", own_questions());
    let (tui, dir) = claude_with_hook(&model, SCRIPTED);
    tui.wait_for(
        &["Allowed by PermissionRequest hook", fake_model::DONE],
        BOUND,
    );
    assert_scripted(&model);
    // The settings file was made by install: uninstall removes it.
    let settings = dir.path().join("home/.claude/settings.json");
    let removed = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args(["hook", "uninstall", "claude-code", "--settings"])
        .arg(&settings)
        .env("ASK_USER_STATE_DIR", dir.path().join("state"))
        .status()
        .unwrap();
    assert!(removed.success());
    assert!(!settings.exists(), "the settings file is gone");
}

/// A headless run (`ask-user hook headless claude-code PROMPT`, which runs
/// `claude -p` answering its permission requests over stdio): its question
/// goes to the user's answerers, the model gets their answers, and the
/// command prints the run's last message. The installed hook, which also
/// sees the question, leaves it to the command (one answer, not two).
#[test]
fn a_headless_claude_codes_question_is_answered_through_the_users_answerers() {
    let _one = one_at_a_time();
    let model = FakeModel::calling("AskUserQuestion", own_questions());
    let (dir, env) = hooked_home(&model, SCRIPTED);
    let home = dir.path().join("home");
    let mut headless = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    headless
        .args(["hook", "headless", "claude-code", "Deploy the release"])
        .arg("--program")
        .arg(npm::folder().join("node_modules/.bin/claude"))
        .envs(env)
        .current_dir(&home);
    let output = finish(headless);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        fake_model::DONE
    );
    assert_scripted(&model);
}

/// An MCP server's form (ask-user's own, here) goes through the hook too,
/// as the batch the model asked: the user's answerers answer its questions
/// by their ids and labels, and the model gets those answers.
#[test]
fn an_mcp_servers_form_in_claude_code_is_answered_through_the_hook() {
    let _one = one_at_a_time();
    let model = FakeModel::start(deploy().0);
    // The form is ask-user's own: the hook reads it back as the batch the
    // model asked (its ids, its labels), not a question per field.
    let answers = tempfile::NamedTempFile::new().unwrap();
    let form_answers = json!({"answers": [
        {"id": "target", "selected": ["Production"]},
        {"id": "checks", "selected": ["Unit tests"]},
        {"id": "note", "selected": [], "custom": "From the hook"},
    ]});
    std::fs::write(answers.path(), form_answers.to_string()).unwrap();
    let script = format!(
        "[[answerer]]\nkind = \"script\"\nanswers = {:?}\n",
        answers.path().display().to_string()
    );
    let (dir, env) = hooked_home(&model, &script);
    let tui = claude_with_our_server(dir.path(), &env);
    tui.wait_for(&[fake_model::DONE], BOUND);
    assert_received(
        &model,
        Duration::ZERO,
        &json!({"answers": [
            {"id": "target", "selected": ["Production"]},
            {"id": "checks", "selected": ["Unit tests"]},
            {"id": "note", "selected": [], "custom": "From the hook"},
        ]}),
    );
}

/// With the hook installed and no inbox running, an MCP server's form is
/// Claude Code's at once: the hook cannot ask anyone, so it leaves the form
/// to the terminal instead of holding it ("running Elicitation hook") until
/// an inbox starts.
#[test]
fn with_no_inbox_running_the_hook_leaves_a_form_to_claude_code() {
    let _one = one_at_a_time();
    let model = FakeModel::start(deploy().0);
    let (dir, env) = hooked_home(&model, "[[answerer]]\nkind = \"inbox\"\n");
    let tui = claude_with_our_server(dir.path(), &env);
    dismiss_claude_codes_form(&tui, &model);
}

/// The person answers at Claude Code's terminal while the hook still asks
/// in the inbox, which shows the question as Claude Code's in its folder:
/// Claude Code leaves the hook running, so the next hook of the session
/// withdraws the question ("answered in Claude Code") and stops it
/// (`ASK_ABORTED` in its audit trail); the model gets the terminal's
/// answers. The audit trail is a FIFO the test reads: the hook opens it
/// once it waits, writes the outcome, and closes it as it ends.
#[test]
fn an_answer_at_the_terminal_withdraws_the_hooks_question_from_the_inbox() {
    let _one = one_at_a_time();
    let model = FakeModel::calling("AskUserQuestion", own_questions());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("asks.jsonl");
    let audit = audit_fifo(&path);
    let config = format!(
        "audit = {:?}\n\n[[answerer]]\nkind = \"inbox\"\n",
        path.display().to_string()
    );
    let (state, env) = hooked_home(&model, &config);
    let inbox = Inbox::serve(&env, state.path());
    let tui = claude_in(state.path(), &env, &[]);
    tui.wait_for(
        &["Where should this release be deployed?", "Enter to select"],
        BOUND,
    );
    let asked = inbox.wait_for("the hook's question", |list| {
        list["questions"]
            .as_array()
            .and_then(|q| q.first())
            .cloned()
    });
    // Claude Code, in the folder it works in (which every surface shows
    // beside it, once).
    assert_eq!(asked["agent"], "Claude Code", "{asked}");
    assert_eq!(
        asked["cwd"],
        state.path().join("home").display().to_string(),
        "{asked}"
    );
    assert_eq!(
        asked["questions"][0]["question"],
        "Where should this release be deployed?"
    );
    let opened = audit.recv_timeout(BOUND);
    assert!(
        matches!(opened, Ok(Audit::Opened)),
        "the hook waits: {opened:?}"
    );
    tui.press("\r", &["Which checks should run before deploying?"], BOUND);
    tui.press("\r", &["[✔] Unit tests"], BOUND);
    tui.press(RIGHT, &["Review your answers"], BOUND);
    tui.press("\r", &[fake_model::DONE], BOUND);
    let result = received(&model);
    assert!(
        result.contains(r#""Where should this release be deployed?"="Staging""#)
            && result.contains(r#""Which checks should run before deploying?"="Unit tests""#),
        "{result}"
    );
    // Everything the hook writes until it ends, within the bound.
    let mut lines = Vec::new();
    loop {
        match audit.recv_timeout(BOUND) {
            Ok(Audit::Line(line)) => lines.push(line),
            Ok(Audit::Opened) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the hook never ended: {lines:?}"),
        }
    }
    assert!(
        lines.iter().any(|line| line.contains("ASK_ABORTED")),
        "the hook's question is withdrawn: {lines:?}"
    );
    let left = inbox.list(true);
    let question = &left["questions"][0];
    assert_eq!(question["state"], "withdrawn", "{left}");
    assert_eq!(question["settledBy"], "answered in Claude Code", "{left}");
    let hooks: Vec<_> = std::fs::read_dir(state.path().join("state/hooks"))
        .unwrap()
        .collect();
    assert!(hooks.is_empty(), "the hook is gone: {hooks:?}");
}

/// The book's recipe (hooks): the hook installed and the inbox in the config.
/// While Claude Code's terminal asks, the question waits in the inbox, and
/// the answer given there (`ask-user inbox answer`, as the page does)
/// reaches the model.
#[test]
fn an_answer_in_the_inbox_reaches_claude_code_while_its_terminal_asks() {
    let _one = one_at_a_time();
    let model = FakeModel::calling("AskUserQuestion", own_questions());
    let (state, env) = hooked_home(&model, "[[answerer]]\nkind = \"inbox\"\n");
    let inbox = Inbox::serve(&env, state.path());
    let tui = claude_in(state.path(), &env, &[]);
    tui.wait_for(&["Where should this release be deployed?"], BOUND);
    let (id, session) = inbox.wait_for("the hook's question", |list| {
        let question = &list["questions"][0];
        Some((
            question["id"].as_str()?.to_owned(),
            question["session"].as_str()?.to_owned(),
        ))
    });
    // Grouped as Claude Code's session: its id is its transcript's name.
    let transcripts = state.path().join("home/.claude/projects");
    let runs: Vec<String> = std::fs::read_dir(&transcripts)
        .unwrap()
        .flat_map(|project| std::fs::read_dir(project.unwrap().path()).unwrap())
        .filter_map(|file| {
            let name = file.unwrap().file_name().into_string().ok()?;
            Some(name.strip_suffix(".jsonl")?.to_owned())
        })
        .collect();
    assert!(
        runs.iter()
            .any(|run| session == format!("claude-code-{run}")),
        "{session} is none of Claude Code's sessions {runs:?}"
    );
    let answers = state.path().join("answers.json");
    let chosen = json!({"answers": [
        {"id": "q1", "selected": ["Production"]},
        {"id": "q2", "selected": ["Load test"], "custom": "and a smoke test"},
    ]});
    std::fs::write(&answers, chosen.to_string()).unwrap();
    let mut answer = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    answer
        .args(["inbox", "answer", &id, "--answers"])
        .arg(&answers)
        .envs(env.iter().cloned());
    let answered = finish(answer);
    assert!(answered.status.success(), "{answered:?}");
    tui.wait_for(&[fake_model::DONE], BOUND);
    let result = received(&model);
    assert!(
        result.contains(r#""Where should this release be deployed?"="Production""#)
            && result.contains(
                r#""Which checks should run before deploying?"="Load test, and a smoke test""#
            ),
        "{result}"
    );
}

/// Claude Code's own question, asked with the hooks installed and the
/// inbox running (the book's recipe), once it waits in the inbox.
struct HookedQuestion {
    model: FakeModel,
    inbox: Inbox,
    tui: Tui,
    /// The inbox's id of the question.
    id: String,
    _state: tempfile::TempDir,
}

fn hooked_question() -> HookedQuestion {
    let model = FakeModel::calling("AskUserQuestion", own_questions());
    let (state, env) = hooked_home(&model, "[[answerer]]\nkind = \"inbox\"\n");
    let inbox = Inbox::serve(&env, state.path());
    let tui = claude_in(state.path(), &env, &[]);
    let id = inbox.wait_for("the hook's question", |list| {
        Some(list["questions"][0]["id"].as_str()?.to_owned())
    });
    HookedQuestion {
        model,
        inbox,
        tui,
        id,
        _state: state,
    }
}

/// A dismissal in the inbox (the page's Dismiss, `ask-user inbox dismiss`)
/// reaches Claude Code as the person's refusal, not as a question left to
/// its terminal: its own question tool is denied with what a model is told
/// of a dismissal, and an MCP server's form is declined (ask-user's own
/// tool then ends `ASK_CANCELLED`).
#[test]
fn a_dismissal_in_the_inbox_reaches_claude_codes_model() {
    let _one = one_at_a_time();
    let dismiss_the_first = |inbox: &Inbox| {
        let id = inbox.wait_for("the hook's question", |list| {
            Some(list["questions"][0]["id"].as_str()?.to_owned())
        });
        let mut dismiss = Command::new(env!("CARGO_BIN_EXE_ask-user"));
        dismiss
            .args(["inbox", "dismiss", &id])
            .envs(inbox.env.iter().cloned());
        let dismissed = finish(dismiss);
        assert!(dismissed.status.success(), "{dismissed:?}");
    };

    let asked = hooked_question();
    dismiss_the_first(&asked.inbox);
    asked.tui.wait_for(&[fake_model::DONE], BOUND);
    let result = received(&asked.model);
    assert!(
        result.contains("The user dismissed the questions without answering"),
        "{result}"
    );

    let model = FakeModel::start(deploy().0);
    let (dir, env) = hooked_home(&model, "[[answerer]]\nkind = \"inbox\"\n");
    let inbox = Inbox::serve(&env, dir.path());
    let tui = claude_with_our_server(dir.path(), &env);
    // While the form waits in the inbox, the terminal says where.
    tui.wait_for(&["Asking you through ask-user"], BOUND);
    dismiss_the_first(&inbox);
    tui.wait_for(&[fake_model::DONE], BOUND);
    let result = received(&model);
    assert!(
        result.contains("ASK_CANCELLED") && result.contains("declined the form"),
        "{result}"
    );
}

/// Esc at Claude Code's own form while the hook asks in the inbox: Claude
/// Code stops the hook, and the inbox's card says the question was
/// dismissed in Claude Code (not that its agent stopped waiting).
#[test]
fn escape_at_claude_codes_form_ends_the_inbox_card_as_dismissed_there() {
    let _one = one_at_a_time();
    let asked = hooked_question();
    asked
        .tui
        .wait_for(&["Where should this release be deployed?"], BOUND);
    asked.tui.keys("\x1b");
    asked.tui.wait_for(&["Declined to answer"], BOUND);
    let settled = asked.inbox.settled(&asked.id);
    assert_eq!(settled["state"], "withdrawn", "{settled}");
    assert_eq!(
        settled["settledBy"], "dismissed in Claude Code",
        "{settled}"
    );
}

/// Claude Code killed while its hook asks in the inbox: the hook sees it
/// gone and withdraws the question, saying Claude Code ended, instead of
/// waiting out its day-long timeout with nobody to tell.
#[test]
fn a_killed_claude_codes_hook_withdraws_its_question() {
    let _one = one_at_a_time();
    let asked = hooked_question();
    asked.tui.signal(libc::SIGKILL);
    let settled = asked.inbox.settled(&asked.id);
    assert_eq!(settled["settledBy"], "Claude Code ended", "{settled}");
}

/// `ask-user inbox serve` for the state folder of `env`, stopped when
/// dropped.
struct Inbox {
    server: std::process::Child,
    env: Vec<(&'static str, String)>,
}

impl Inbox {
    fn serve(env: &[(&'static str, String)], dir: &Path) -> Inbox {
        let settings = dir.join("inbox.toml");
        std::fs::write(&settings, "").unwrap();
        let mut server = Command::new(env!("CARGO_BIN_EXE_ask-user"))
            .args(["inbox", "serve", "--config"])
            .arg(&settings)
            .envs(env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = child::said_on_stderr(&mut server, "the inbox serves", BOUND);
        let inbox = Inbox {
            server,
            env: env.to_vec(),
        };
        said.unwrap_or_else(|why| panic!("the inbox did not start: {why}"));
        inbox
    }

    /// `inbox list --json` (with `--all`: the questions that left too).
    fn list(&self, all: bool) -> Value {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
        command
            .args(["inbox", "list", "--json"])
            .envs(self.env.iter().cloned());
        if all {
            command.arg("--all");
        }
        let output = finish(command);
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// Waits, at most [`BOUND`], until `found` finds something in the list
    /// of waiting questions ([`wait_until`](Self::wait_until)).
    fn wait_for<T>(&self, what: &str, found: impl Fn(&Value) -> Option<T>) -> T {
        self.wait_until(what, false, found)
    }

    /// Question `id` once it no longer waits.
    fn settled(&self, id: &str) -> Value {
        self.wait_until("the question settled", true, |list| {
            list["questions"]
                .as_array()?
                .iter()
                .find(|q| q["id"] == id && q["state"] != "waiting")
                .cloned()
        })
    }

    /// Waits, at most [`BOUND`], until `found` finds something in the list
    /// (with `all`, of the questions that left too): the inbox's state, with
    /// no event to wait on from here, read again every 100 ms.
    fn wait_until<T>(&self, what: &str, all: bool, found: impl Fn(&Value) -> Option<T>) -> T {
        let start = std::time::Instant::now();
        loop {
            let list = self.list(all);
            if let Some(found) = found(&list) {
                return found;
            }
            assert!(start.elapsed() < BOUND, "no {what} in the inbox: {list}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// What a hook writes to its audit trail, read as it comes.
#[derive(Debug)]
enum Audit {
    /// The hook opened it.
    Opened,
    Line(String),
}

/// Makes `path` a FIFO and reads it on a thread: [`Audit::Opened`] once a
/// writer opens it, then its lines; the channel closes when the writer
/// closes it.
fn audit_fifo(path: &Path) -> mpsc::Receiver<Audit> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let (tx, audit) = mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let Ok(file) = std::fs::File::open(&path) else {
            return;
        };
        let _ = tx.send(Audit::Opened);
        for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
            let _ = tx.send(Audit::Line(line));
        }
    });
    audit
}

/// Dismisses the form Claude Code shows in `tui` for the deploy batch, and
/// checks that `model` was told the user cancelled.
fn dismiss_claude_codes_form(tui: &Tui, model: &FakeModel) {
    tui.wait_for(&["requests your input", "Accept"], BOUND);
    // Once the form has the keys (Esc before it would stop the turn).
    tui.press(
        DOWN,
        &["Deploy: or in your own words: Type something"],
        BOUND,
    );
    // Once: a second Esc would reach the client itself.
    tui.keys("\x1b");
    tui.wait_for(&[fake_model::DONE], BOUND);
    assert_cancelled(model, "Claude Code");
}

/// Dismissing the form in either client: the model is told the user
/// cancelled, never that questions were skipped.
#[test]
fn cancelling_the_form_in_either_client_tells_the_model_so() {
    let _one = one_at_a_time();
    let claude = FakeModel::start(deploy().0);
    let (tui, _dir) = claude_tui(&claude);
    dismiss_claude_codes_form(&tui, &claude);

    let codex = FakeModel::start(deploy().0);
    let (tui, _dir) = codex_tui(&codex);
    tui.wait_for(&["Field 1/8"], BOUND);
    tui.press("\x0e", &["Field 2/8"], BOUND);
    // Once: a second Esc would reach the client itself.
    tui.keys("\x1b");
    tui.wait_for(&[fake_model::DONE], BOUND);
    assert_cancelled(&codex, "Codex");
}

fn assert_cancelled(model: &FakeModel, client: &str) {
    let result = received(model);
    assert!(
        result.contains("ASK_CANCELLED") && result.contains("cancelled the form"),
        "{client}: {result:?}"
    );
}

/// Runs `command` to its end, at most [`BOUND`] (killed past it); its
/// output.
pub(crate) fn finish(mut command: Command) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client starts");
    let pid = child.id();
    let (tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match done.recv_timeout(BOUND) {
        Ok(status) => status.unwrap(),
        Err(_) => {
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("the client did not finish within {BOUND:?}");
        }
    }
}

/// What every client run shares: no traffic but to our model server.
fn client(program: PathBuf, home: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .current_dir(home);
    command
}

#[test]
fn claude_code_headless_gets_the_config_answerers_answers() {
    let _one = one_at_a_time();
    let npm = npm::folder();
    let (deploy, answers) = deploy();
    let model = FakeModel::start(deploy);
    let (dir, config) = run_folder(true);
    let home = dir.path().join("home");
    let mcp = claude_mcp(dir.path(), &config);
    let mut claude = client(npm.join("node_modules/.bin/claude"), &home);
    claude
        .envs(claude_env(&model))
        .args(["-p", "Deploy the release", "--mcp-config"])
        .arg(&mcp)
        // Headless, Claude Code asks no permission: name the tool.
        .args(["--allowedTools", CLAUDE_TOOL]);
    let status = finish(claude).status;
    assert!(status.success(), "claude -p: {status:?}");
    assert_received(&model, Duration::ZERO, &answers);
}

#[test]
fn codex_exec_gets_the_config_answerers_answers() {
    let _one = one_at_a_time();
    let npm = npm::folder();
    let (deploy, answers) = deploy();
    let model = FakeModel::start(deploy);
    let (dir, config) = run_folder(true);
    let home = dir.path().join("home");
    let codex_home = codex_home(dir.path(), &model);
    let mut codex = client(npm.join("node_modules/.bin/codex"), &home);
    codex
        .env("CODEX_HOME", &codex_home)
        .env("TEST_MODEL_KEY", "test")
        // The server as the book registers it for a headless run.
        .args(codex_server(&config))
        .args(["exec", "--skip-git-repo-check", "Deploy the release"]);
    let status = finish(codex).status;
    assert!(status.success(), "codex exec: {status:?}");
    assert_received(&model, Duration::ZERO, &answers);
}

/// Gemini CLI's settings in `home`: the Gemini API with a key (the model
/// server stands in for it, `GOOGLE_GEMINI_BASE_URL`), and `ask-user mcp`
/// registered as the book says (`gemini mcp add --trust`) for an agent of
/// `inbox`.
fn gemini_home(npm: &Path, home: &Path, inbox: &crate::inbox::Inbox) {
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    let settings = json!({"security": {"auth": {"selectedType": "gemini-api-key"}}});
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string()).unwrap();
    let mut add = client(npm.join("node_modules/.bin/gemini"), home);
    add.args([
        "mcp",
        "add",
        "--scope",
        "user",
        "--trust",
        "--timeout",
        "3600000",
    ])
    .arg("--env")
    .arg(format!("ASK_USER_STATE_DIR={}", inbox.state().display()))
    .args([
        "ask-user",
        env!("CARGO_BIN_EXE_ask-user"),
        "--",
        "mcp",
        "--config",
    ])
    .arg(inbox.agent_config());
    let added = finish(add);
    assert!(added.status.success(), "gemini mcp add: {added:?}");
}

#[test]
fn gemini_cli_without_forms_gets_the_answers_given_in_the_inbox() {
    let _one = one_at_a_time();
    let npm = npm::folder();
    let (deploy, answers) = deploy();
    let model = FakeModel::start(deploy);
    let inbox = crate::inbox::Inbox::new();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    gemini_home(&npm, &home, &inbox);
    let mut gemini = client(npm.join("node_modules/.bin/gemini"), &home);
    gemini
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://{}", model.address),
        )
        .env("GEMINI_API_KEY", "test")
        // Headless in a folder of its own: trusted, as a CI run would be.
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        // A model of its own: no routing calls to the model server first.
        .args(["--model", "gemini-2.5-flash", "-p", "Deploy the release"]);
    let run = std::thread::spawn(move || finish(gemini));
    let asked = inbox.wait_for("Gemini CLI's question", false, |q| {
        q["agentWaiting"] == true
    });
    assert_eq!(asked["questions"].as_array().unwrap().len(), 3, "{asked}");
    // Named as people know it (its `clientInfo`), not as `ask-user (pid N)`.
    assert_eq!(asked["agent"], "Gemini CLI", "{asked}");
    let answered = inbox.answer(asked["id"].as_str().unwrap(), &answers);
    assert!(answered.status.success(), "inbox answer: {answered:?}");
    let output = run.join().unwrap();
    assert!(output.status.success(), "gemini -p: {output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(fake_model::DONE),
        "{output:?}"
    );
    assert_received(&model, Duration::ZERO, &answers);
}

/// Gemini CLI's terminal, while its call waits in the inbox, says where
/// (the call's progress: "Asking you: questions go to the inbox of …"),
/// and the answer given there reaches its model.
#[test]
fn gemini_cli_says_where_its_question_waits() {
    let _one = one_at_a_time();
    let npm = npm::folder();
    let (deploy, answers) = deploy();
    let model = FakeModel::start(deploy);
    let inbox = crate::inbox::Inbox::new();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    gemini_home(&npm, &home, &inbox);
    let env = [
        (
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://{}", model.address),
        ),
        ("GEMINI_API_KEY", "test".to_owned()),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".to_owned()),
        ("HOME", home.display().to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let tui = Tui::start(
        &npm.join("node_modules/.bin/gemini"),
        &["--model", "gemini-2.5-flash", "-i", "Deploy the release"],
        &home,
        &env,
    );
    tui.wait_for(&["Asking you: questions go to the inbox of"], BOUND);
    let asked = inbox.wait_for("Gemini CLI's question", false, |q| {
        q["agentWaiting"] == true
    });
    let answered = inbox.answer(asked["id"].as_str().unwrap(), &answers);
    assert!(answered.status.success(), "inbox answer: {answered:?}");
    assert_received(&model, BOUND, &answers);
}

/// The skipped answers of a form accepted as it came: the recommended
/// choice made, nothing else.
fn defaults() -> Value {
    json!({"answers": [
        {"id": "target", "selected": ["Staging (Recommended)"]},
        {"id": "checks", "selected": []},
        {"id": "note", "selected": []},
    ]})
}

/// Claude Code with the hooks installed ([`hooked_home`], the user's config
/// `config`) and `ask-user mcp` on the same config, its model delegating
/// the question to a sub-agent; the run's folder and environment.
fn delegating_claude(
    model: &FakeModel,
    config: &str,
) -> (tempfile::TempDir, Vec<(&'static str, String)>, PathBuf) {
    let (dir, env) = hooked_home(model, config);
    let config = dir.path().join("home/.config/ask-user/config.toml");
    let mcp = claude_mcp(dir.path(), &config);
    (dir, env, mcp)
}

#[test]
fn a_claude_code_sub_agents_form_says_which_sub_agent_asks_and_its_answer_reaches_it() {
    let _one = one_at_a_time();
    let model = FakeModel::delegating(deploy().0);
    let (dir, env, mcp) = delegating_claude(&model, "[policy]\ndelegated = \"relay\"\n");
    let args = [
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--allowedTools",
        CLAUDE_TOOL,
    ];
    let tui = claude_in(dir.path(), &env, &args);
    let form = tui.wait_for(&["requests your input", "Accept"], BOUND);
    // The relay's label: the session (as the inbox keys it), the
    // sub-agent's kind and the start of its id.
    let label = form
        .lines()
        .find(|line| line.contains("Asked by sub-agent claude-code-"))
        .unwrap_or_else(|| panic!("no sub-agent label in:\n{form}"));
    assert!(label.contains(" › general-purpose "), "{label}");
    tui.keys(&DOWN.repeat(5));
    tui.wait_for(&["❯ Accept"], BOUND);
    // The form goes, and the sub-agent shows in the list of agents.
    tui.press("\r", &["◯ general-purpose"], BOUND);
    assert_received(&model, BOUND, &defaults());
}

/// With the inbox running, a relayed sub-agent's form goes through the
/// `Elicitation` hook to the inbox, which names the sub-agent (read back
/// from ask-user's own form), not the main agent; its answer there reaches
/// the sub-agent.
#[test]
fn a_relayed_sub_agents_form_reaches_the_inbox_as_the_sub_agents() {
    let _one = one_at_a_time();
    let (deploy, answers) = deploy();
    let model = FakeModel::delegating(deploy);
    let (dir, env, mcp) = delegating_claude(
        &model,
        "[[answerer]]\nkind = \"inbox\"\n\n[policy]\ndelegated = \"relay\"\n",
    );
    let inbox = Inbox::serve(&env, dir.path());
    let args = [
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--allowedTools",
        CLAUDE_TOOL,
    ];
    let _tui = claude_in(dir.path(), &env, &args);
    let (id, agent) = inbox.wait_for("the sub-agent's form", |list| {
        let question = &list["questions"][0];
        Some((
            question["id"].as_str()?.to_owned(),
            question["agent"].as_str()?.to_owned(),
        ))
    });
    assert!(
        agent.starts_with("Claude Code · ask-user · sub-agent claude-code-")
            && agent.contains(" › general-purpose "),
        "{agent}"
    );
    let file = dir.path().join("answers.json");
    std::fs::write(&file, answers.to_string()).unwrap();
    let mut answer = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    answer
        .args(["inbox", "answer", &id, "--answers"])
        .arg(&file)
        .envs(env.iter().cloned());
    let answered = finish(answer);
    assert!(answered.status.success(), "{answered:?}");
    assert_received(&model, BOUND, &answers);
}

/// `claude -p` in `dir/home` with `env`, `ask-user mcp` as `mcp` registers
/// it, the tool allowed.
fn headless_claude(dir: &Path, env: Vec<(&str, String)>, mcp: &Path) -> Command {
    let mut claude = client(
        npm::folder().join("node_modules/.bin/claude"),
        &dir.join("home"),
    );
    claude
        .envs(env)
        .args(["-p", "Deploy the release", "--mcp-config"])
        .arg(mcp)
        .args(["--allowedTools", CLAUDE_TOOL]);
    claude
}

/// Tool-use ids can repeat across sessions (a gateway that numbers its
/// calls, as our model does: every run's call is `toolu_1`). A sub-agent's
/// call noted in one run leaves the main agent's call of the same id in the
/// next run its own: answered, not refused as a sub-agent's.
#[test]
fn a_main_agents_call_is_its_own_whatever_a_sub_agent_called_under_its_id() {
    let _one = one_at_a_time();
    let (deploy, answers) = deploy();
    let script = format!(
        "[mcp]\nforms = \"never\"\n\n[[answerer]]\nkind = \"script\"\nanswers = {:?}\n",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/deploy.answers.json")
            .display()
            .to_string()
    );
    let delegating = FakeModel::delegating(deploy.clone());
    let (dir, env, mcp) = delegating_claude(&delegating, &script);
    let status = finish(headless_claude(dir.path(), env.clone(), &mcp)).status;
    assert!(status.success(), "claude -p: {status:?}");
    assert!(
        received(&delegating).contains("DELEGATED_CALLER"),
        "the sub-agent is refused by default"
    );

    // The next run, in the same home: the main agent calls, as `toolu_1`.
    let main = FakeModel::start(deploy);
    let pointed: Vec<(&str, String)> = claude_env(&main);
    let env: Vec<(&str, String)> = env
        .into_iter()
        .filter(|(name, _)| !pointed.iter().any(|(other, _)| other == name))
        .chain(pointed.clone())
        .collect();
    let status = finish(headless_claude(dir.path(), env, &mcp)).status;
    assert!(status.success(), "claude -p: {status:?}");
    assert_received(&main, Duration::ZERO, &answers);
}

#[test]
fn a_claude_code_sub_agent_is_refused_by_default_and_told_to_report_to_its_parent() {
    let _one = one_at_a_time();
    let model = FakeModel::delegating(deploy().0);
    let (dir, env, mcp) = delegating_claude(&model, "");
    let claude = headless_claude(dir.path(), env, &mcp);
    let status = finish(claude).status;
    assert!(status.success(), "claude -p: {status:?}");
    let result = model
        .tool_result(Duration::ZERO)
        .expect("the sub-agent got a result");
    assert!(
        result.contains("DELEGATED_CALLER") && result.contains("final result"),
        "{result}"
    );
}

#[test]
fn a_headless_claude_code_sub_agents_question_waits_in_the_inbox_labelled_and_is_answered() {
    let _one = one_at_a_time();
    let (deploy, answers) = deploy();
    let model = FakeModel::delegating(deploy);
    let inbox = crate::inbox::Inbox::new();
    let config = "[policy]\ndelegated = \"relay\"\n\n[mcp]\nforms = \"never\"\n\n\
                  [[answerer]]\nkind = \"inbox\"\n";
    let (dir, mut env, mcp) = delegating_claude(&model, config);
    // The hooks' notes and the inbox's socket: one state folder.
    env.retain(|(name, _)| *name != "ASK_USER_STATE_DIR");
    env.push(("ASK_USER_STATE_DIR", inbox.state().display().to_string()));
    let claude = headless_claude(dir.path(), env, &mcp);
    let run = std::thread::spawn(move || finish(claude));
    let asked = inbox.wait_for("the sub-agent's question", false, |q| {
        q["agentWaiting"] == true
    });
    let agent = asked["agent"].as_str().unwrap();
    assert!(
        agent.contains("sub-agent claude-code-") && agent.contains(" › general-purpose "),
        "{asked}"
    );
    assert!(
        asked["session"]
            .as_str()
            .unwrap()
            .starts_with("general-purpose "),
        "{asked}"
    );
    let answered = inbox.answer(asked["id"].as_str().unwrap(), &answers);
    assert!(answered.status.success(), "inbox answer: {answered:?}");
    let output = run.join().unwrap();
    assert!(output.status.success(), "claude -p: {output:?}");
    assert_received(&model, Duration::ZERO, &answers);
}

/// What Codex's model asks with its own `request_user_input`.
fn codex_question() -> Value {
    json!({"questions": [{"id": "target", "header": "Deploy",
        "question": "Where should this release be deployed?",
        "options": [
            {"label": "Staging (Recommended)", "description": "Safe to try."},
            {"label": "Production", "description": "Users get it now."}]}]})
}

/// `ask-user hook run codex` in a pty, its answerers the inbox's, once
/// Codex's model has asked [`codex_question`]: shown in Codex's UI, waiting
/// in the inbox. Fields in the order they go: the run, then its folder.
struct CodexAsked {
    tui: Tui,
    dir: tempfile::TempDir,
    /// The inbox's question.
    asked: Value,
    inbox: crate::inbox::Inbox,
    model: FakeModel,
}

fn codex_asked() -> CodexAsked {
    let model = FakeModel::calling("request_user_input", codex_question());
    let inbox = crate::inbox::Inbox::new();
    let (dir, _) = run_folder(false);
    codex_home(dir.path(), &model);
    let tui = codex_run(
        dir.path(),
        &inbox,
        // Its own tool outside Plan mode too: the model asks at once.
        &[
            "--enable",
            "default_mode_request_user_input",
            "Deploy the release",
        ],
    );
    tui.wait_for(&["Where should this release be deployed?"], BOUND);
    let asked = inbox.wait_for("Codex's question", false, |q| q["agentWaiting"] == true);
    CodexAsked {
        tui,
        dir,
        asked,
        inbox,
        model,
    }
}

/// `ask-user hook run codex -- FLAGS` in a pty, in `dir` (its `home`, its
/// `codex` home), its answerers the inbox's.
fn codex_run(dir: &Path, inbox: &crate::inbox::Inbox, flags: &[&str]) -> Tui {
    let npm = npm::folder();
    let home = dir.join("home");
    let codex_home = dir.join("codex");
    let (state, config) = (inbox.state(), inbox.agent_config());
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("CODEX_HOME", codex_home.to_str().unwrap()),
        ("TEST_MODEL_KEY", "test"),
        ("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR")),
        ("ASK_USER_STATE_DIR", state.to_str().unwrap()),
    ];
    let codex = npm.join("node_modules/.bin/codex");
    let mut args = vec![
        "hook",
        "run",
        "codex",
        "--config",
        config.to_str().unwrap(),
        "--program",
        codex.to_str().unwrap(),
        "--",
    ];
    args.extend(flags);
    Tui::start(
        Path::new(env!("CARGO_BIN_EXE_ask-user")),
        &args,
        &home,
        &env,
    )
}

/// The answer Codex's model received, as Codex sends it.
fn assert_codex_received(model: &FakeModel, label: &str) {
    let result = model.tool_result(BOUND).expect("the model got the answer");
    assert_eq!(
        serde_json::from_str::<Value>(&result).unwrap(),
        json!({"answers": {"target": {"answers": [label]}}}),
        "{result}"
    );
}

#[test]
fn codexs_own_question_is_answered_in_the_inbox_while_its_ui_shows_it() {
    let _one = one_at_a_time();
    // Codex's UI shows the question, and the inbox has it too, as Codex's.
    let codex = codex_asked();
    let (tui, asked) = (&codex.tui, &codex.asked);
    assert!(
        asked["agent"].as_str().unwrap().starts_with("Codex"),
        "{asked}"
    );
    assert_eq!(asked["questions"][0]["options"][1]["label"], "Production");
    let answers = json!({"answers": [{"id": "q1", "selected": ["Production"]}]});
    let answered = codex.inbox.answer(asked["id"].as_str().unwrap(), &answers);
    assert!(answered.status.success(), "inbox answer: {answered:?}");
    assert_codex_received(&codex.model, "Production");
    // Codex's UI no longer asks.
    tui.wait_for(&[fake_model::DONE], BOUND);
}

/// Codex's UI, quitting, names a socket to reconnect to that ended with the
/// run: ask-user says the run that goes on with the session, and that run
/// shows it.
#[test]
fn the_way_back_to_a_codex_session_is_said_and_works() {
    let _one = one_at_a_time();
    let mut codex = codex_asked();
    codex.tui.press("\r", &[fake_model::DONE], BOUND);
    // Ctrl-C twice: Codex's UI quits.
    codex.tui.keys("\x03");
    codex
        .tui
        .press("\x03", &["ask-user hook run codex -- resume "], BOUND);
    assert!(codex.tui.ended(BOUND).is_some(), "the run did not end");
    let screen = codex.tui.wait_for(&["to go on with this session"], BOUND);
    let session = screen
        .split("ask-user hook run codex -- resume ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the session to resume")
        .to_owned();
    let again = codex_run(codex.dir.path(), &codex.inbox, &["resume", &session]);
    // The session as it was left: its task and the model's last words.
    again.wait_for(&["Deploy the release", fake_model::DONE], BOUND);
}

/// Esc in Codex's UI interrupts its turn: the inbox's question is
/// withdrawn as dismissed in Codex (as Esc in Claude Code and OpenCode
/// says), never recorded as answered there.
#[test]
fn escape_in_codex_withdraws_its_question_as_dismissed() {
    let _one = one_at_a_time();
    let codex = codex_asked();
    codex
        .tui
        .press("\x1b", &["Conversation interrupted"], BOUND);
    let left = codex.inbox.wait_for("the question withdrawn", true, |q| {
        q["id"] == codex.asked["id"] && q["state"] != "waiting"
    });
    assert_eq!(left["state"], "withdrawn", "{left}");
    assert_eq!(left["settledBy"], "dismissed in Codex", "{left}");
    assert_eq!(codex.model.tool_result(Duration::ZERO), None);
}

/// Dismissed in the inbox, the question reaches Codex as its own Esc does:
/// the turn is interrupted, and its model is given no answer.
#[test]
fn a_dismissal_in_the_inbox_interrupts_codexs_turn() {
    let _one = one_at_a_time();
    let codex = codex_asked();
    let dismissed = codex.inbox.dismiss(codex.asked["id"].as_str().unwrap());
    assert!(dismissed.status.success(), "inbox dismiss: {dismissed:?}");
    codex.tui.wait_for(&["Conversation interrupted"], BOUND);
    assert_eq!(codex.model.tool_result(Duration::ZERO), None);
    let left = codex.inbox.wait_for("the question dismissed", true, |q| {
        q["id"] == codex.asked["id"] && q["state"] != "waiting"
    });
    assert_eq!(left["state"], "cancelled", "{left}");
}

/// A choice and a note beside it, as Codex's own UI takes them, given in
/// the inbox: the note reaches Codex's model marked as a note typed in
/// Codex is (`user_note: `), after the choice.
#[test]
fn a_choice_and_a_note_given_in_the_inbox_reach_codexs_model_as_its_own_do() {
    let _one = one_at_a_time();
    let codex = codex_asked();
    assert_eq!(
        codex.asked["questions"][0]["accepts"]["note"], true,
        "the inbox offers a note beside the choice: {}",
        codex.asked
    );
    let answers = json!({"answers": [
        {"id": "q1", "selected": ["Production"], "custom": "after 5pm"}]});
    let answered = codex
        .inbox
        .answer(codex.asked["id"].as_str().unwrap(), &answers);
    assert!(answered.status.success(), "inbox answer: {answered:?}");
    let result = codex
        .model
        .tool_result(BOUND)
        .expect("the model got the answer");
    assert_eq!(
        serde_json::from_str::<Value>(&result).unwrap(),
        json!({"answers": {"target": {"answers": ["Production", "user_note: after 5pm"]}}}),
        "{result}"
    );
}

#[test]
fn an_answer_in_codexs_ui_withdraws_its_question_from_the_inbox() {
    let _one = one_at_a_time();
    let codex = codex_asked();
    let (tui, asked) = (&codex.tui, &codex.asked);
    // The recommended choice, taken in Codex's own UI.
    tui.press("\r", &[fake_model::DONE], BOUND);
    assert_codex_received(&codex.model, "Staging (Recommended)");
    let left = codex.inbox.wait_for("the question withdrawn", true, |q| {
        q["id"] == asked["id"] && q["state"] != "waiting"
    });
    assert_eq!(left["state"], "withdrawn", "{left}");
    assert_eq!(left["settledBy"], "answered in Codex", "{left}");
}

/// Ended from outside while Codex asks (SIGTERM, as `kill` or a service
/// manager ends it), `ask-user hook run codex` leaves none of Codex's
/// processes running, nor its socket or log: Codex from npm is a Node
/// launcher whose native binary outlived a SIGKILL to the launcher, keeping
/// the app server alive.
#[test]
fn a_run_ended_from_outside_leaves_none_of_codexs_processes() {
    let _one = one_at_a_time();
    let mut codex = codex_asked();
    end_codexs_run(&mut codex, libc::SIGTERM);
    let state = codex.inbox.state();
    let left: Vec<_> = std::fs::read_dir(state.join("codex"))
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("app-server-"))
        .collect();
    assert!(left.is_empty(), "left in the folder: {left:?}");
}

/// Killed (SIGKILL, which nothing can catch: the OOM killer, `kill -9`),
/// `ask-user hook run codex` still leaves none of Codex's processes
/// running: they are told to stop when it dies.
#[test]
fn a_killed_run_leaves_none_of_codexs_processes() {
    let _one = one_at_a_time();
    end_codexs_run(&mut codex_asked(), libc::SIGKILL);
}

/// Sends `signal` to `codex`'s `ask-user hook run codex` alone, and waits
/// until nothing of the run is left running.
fn end_codexs_run(codex: &mut CodexAsked, signal: libc::c_int) {
    // Every process of this run names its socket, in this inbox's folder.
    let state = codex.inbox.state();
    let of_the_run = || -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(line) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            if line.contains(&*state.to_string_lossy()) && line.contains("app-server-") {
                found.push(line);
            }
        }
        found
    };
    let running = of_the_run();
    assert!(
        running
            .iter()
            .any(|line| line.contains("app-server --listen")),
        "no app server among {running:?}"
    );
    codex.tui.signal(signal);
    assert!(codex.tui.ended(BOUND).is_some(), "ask-user did not end");
    let start = std::time::Instant::now();
    loop {
        let left = of_the_run();
        if left.is_empty() {
            break;
        }
        assert!(start.elapsed() < BOUND, "still running: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The README's minute registers the tool for every project (`--scope
/// user`), as a user means it: run as written in one folder, Claude Code
/// lists it in another.
#[test]
fn the_readmes_claude_mcp_add_registers_the_tool_in_every_folder() {
    let _one = one_at_a_time();
    let npm = npm::folder();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let line = readme
        .lines()
        .find(|line| line.starts_with("claude mcp add "))
        .expect("the README's claude mcp add line");
    let words: Vec<&str> = line
        .split(" #")
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let bin = dir.path().join("bin");
    for folder in [home.join("one"), home.join("two"), bin.clone()] {
        std::fs::create_dir_all(folder).unwrap();
    }
    // `ask-user` on the PATH, as the line assumes.
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_ask-user"), bin.join("ask-user")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let claude = npm.join("node_modules/.bin/claude");
    let mut add = client(claude.clone(), &home);
    add.args(&words[1..])
        .env("PATH", &path)
        .current_dir(home.join("one"));
    let added = finish(add);
    assert!(added.status.success(), "{line}: {added:?}");
    let mut list = client(claude, &home);
    list.args(["mcp", "list"])
        .env("PATH", &path)
        .current_dir(home.join("two"));
    let listed = finish(list);
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(
        out.contains("ask-user"),
        "another folder lists it: {listed:?}"
    );
}

/// Codex ends an MCP call at its `tool_timeout_sec` (60 s unless the
/// registration says otherwise, as the book's does): the model is told the
/// call timed out, and the question stays in the inbox, its agent gone,
/// for the same call asked again. Here with 4 s.
#[test]
fn codex_ends_a_call_at_its_tool_timeout_and_its_question_stays() {
    let _one = one_at_a_time();
    let npm = npm::folder();
    let model = FakeModel::start(deploy().0);
    let inbox = crate::inbox::Inbox::new();
    let (dir, config) = run_folder(false);
    std::fs::write(
        &config,
        "[mcp]\nforms = \"never\"\n\n[[answerer]]\nkind = \"inbox\"\n",
    )
    .unwrap();
    let codex_home = codex_home(dir.path(), &model);
    let state = format!("{:?}", inbox.state().display().to_string());
    let mut codex = client(
        npm.join("node_modules/.bin/codex"),
        &dir.path().join("home"),
    );
    codex
        .env("CODEX_HOME", &codex_home)
        .env("TEST_MODEL_KEY", "test")
        .args(codex_server(&config))
        .args(["-c", "mcp_servers.ask-user.tool_timeout_sec=4"])
        .args([
            "-c",
            &format!("mcp_servers.ask-user.env.ASK_USER_STATE_DIR={state}"),
        ])
        .args(["exec", "--skip-git-repo-check", "Deploy the release"]);
    let status = finish(codex).status;
    assert!(status.success(), "codex exec: {status:?}");
    let result = model
        .tool_result(Duration::ZERO)
        .expect("the model got a result");
    assert!(
        result.contains("timed out awaiting tools/call after 4s"),
        "{result}"
    );
    let left = inbox.wait_for("its agent gone", false, |q| q["agentWaiting"] == false);
    assert_eq!(left["agent"], "Codex", "{left}");
    assert_eq!(left["state"], "waiting", "{left}");
}
