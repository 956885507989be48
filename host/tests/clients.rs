//! `ask-user mcp` in the clients people use, each pointed at a model server
//! of ours (`support/fake_model.rs`) that calls the tool with the README's
//! example batch: Claude Code 2.1.328 and Codex 0.169.0 from npm
//! (`host/tests/npm`). Headless runs (`claude -p`, `codex exec`) show no
//! form, so `[mcp] forms = "never"` hands the questions to the config's own
//! answerers: what the model receives is exactly their answers.

#[path = "support/fake_model.rs"]
mod fake_model;
#[path = "support/npm.rs"]
mod npm;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use fake_model::FakeModel;
use serde_json::Value;

/// The longest a client run may take.
const BOUND: Duration = Duration::from_secs(180);

/// The README's example batch, and the answers the script gives it.
fn deploy() -> (Value, Value) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(examples.join(name)).unwrap()).unwrap()
    };
    (read("deploy.json"), read("deploy.answers.json"))
}

/// A folder for one client run: a home of its own, and the ask-user config
/// of a headless run (the script answerer, no forms).
fn run_folder() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::create_dir(dir.path().join("home")).unwrap();
    let answers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/deploy.answers.json");
    let config = dir.path().join("ask-user.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\nforms = \"never\"\n\n[[answerer]]\nkind = \"script\"\nanswers = {:?}\n",
            answers.display().to_string()
        ),
    )
    .unwrap();
    (dir, config)
}

/// Runs `command` to its end, at most [`BOUND`] (killed past it).
fn finish(mut command: Command) -> ExitStatus {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the client starts");
    let pid = child.id();
    let (tx, done) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
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
    let npm = npm::folder();
    let (deploy, answers) = deploy();
    let model = FakeModel::start(deploy);
    let (dir, config) = run_folder();
    let home = dir.path().join("home");
    let servers = serde_json::json!({"mcpServers": {"ask-user": {
        "command": env!("CARGO_BIN_EXE_ask-user"),
        "args": ["mcp", "--config", config]}}});
    let mcp = dir.path().join("mcp.json");
    std::fs::write(&mcp, servers.to_string()).unwrap();
    let mut claude = client(npm.join("node_modules/.bin/claude"), &home);
    claude
        .env("ANTHROPIC_BASE_URL", format!("http://{}", model.address))
        .env("ANTHROPIC_API_KEY", "sk-test")
        // MCP tools in the request itself, not behind a tool search.
        .env("ENABLE_TOOL_SEARCH", "false")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Deploy the release", "--mcp-config"])
        .arg(&mcp)
        // Headless, Claude Code asks no permission: name the tool.
        .args(["--allowedTools", "mcp__ask-user__ask_user_question"]);
    let status = finish(claude);
    assert!(status.success(), "claude -p: {status:?}");
    let result = model
        .tool_result(Duration::ZERO)
        .expect("the model got the tool's result");
    assert_eq!(
        serde_json::from_str::<Value>(&result).unwrap(),
        answers,
        "{result}"
    );
}

#[test]
fn codex_exec_gets_the_config_answerers_answers() {
    let npm = npm::folder();
    let (deploy, answers) = deploy();
    let model = FakeModel::start(deploy);
    let (dir, config) = run_folder();
    let home = dir.path().join("home");
    let codex_home = dir.path().join("codex");
    std::fs::create_dir(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"test-model\"\nmodel_provider = \"test\"\n\n\
             [model_providers.test]\nname = \"test\"\nbase_url = \"http://{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"TEST_MODEL_KEY\"\n",
            model.address,
        ),
    )
    .unwrap();
    let mut codex = client(npm.join("node_modules/.bin/codex"), &home);
    codex
        .env("CODEX_HOME", &codex_home)
        .env("TEST_MODEL_KEY", "test")
        // The server as the README registers it for a headless run.
        .arg("-c")
        .arg(format!(
            "mcp_servers.ask-user.command={:?}",
            env!("CARGO_BIN_EXE_ask-user")
        ))
        .arg("-c")
        .arg(format!(
            "mcp_servers.ask-user.args=[\"mcp\",\"--config\",{:?}]",
            config.display().to_string()
        ))
        .args(["exec", "--skip-git-repo-check", "Deploy the release"]);
    let status = finish(codex);
    assert!(status.success(), "codex exec: {status:?}");
    let result = model
        .tool_result(Duration::ZERO)
        .expect("the model got the tool's result");
    assert_eq!(
        serde_json::from_str::<Value>(&result).unwrap(),
        answers,
        "{result}"
    );
}
