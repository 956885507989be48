//! OpenCode (1.18.33 from npm, `host/tests/npm`: `opencode-linux-x64`, the
//! binary `opencode-ai` runs on Linux x64), pointed at
//! our model server as its Anthropic provider: its own question tool
//! answered beside its UI (`ask-user hook run opencode`), driven in a pty
//! with the inbox as the user's answerer, and `ask-user mcp` registered in
//! its config as the book shows.

use ask_user_test_support::fake_model::{self, FakeModel};
use ask_user_test_support::npm;
use ask_user_test_support::tui::Tui;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::clients::{BOUND, one_at_a_time};
use crate::inbox::Inbox;

/// OpenCode's program: the binary `opencode-ai` runs on Linux x64.
fn opencode_program() -> std::path::PathBuf {
    npm::folder().join("node_modules/opencode-linux-x64/bin/opencode")
}

/// What OpenCode's model asks with its own `question` tool.
fn question() -> Value {
    json!({"questions": [{"question": "Where should this release be deployed?",
        "header": "Deploy",
        "options": [
            {"label": "Staging", "description": "Safe to try."},
            {"label": "Production", "description": "Users get it now."}]}]})
}

/// `dir/home/.config/opencode/opencode.json` with `model` as its Anthropic
/// provider, and `more` (an `mcp` entry) beside it.
fn opencode_home(dir: &Path, model: &FakeModel, more: Value) {
    let config = dir.join("home/.config/opencode");
    std::fs::create_dir_all(&config).unwrap();
    let mut settings = json!({
        "model": "anthropic/claude-sonnet-4-5",
        "provider": {"anthropic": {"options": {
            "baseURL": format!("http://{}/v1", model.address), "apiKey": "sk-test"}}},
        "autoupdate": false,
        "share": "disabled",
    });
    settings
        .as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    std::fs::write(config.join("opencode.json"), settings.to_string()).unwrap();
}

/// The environment OpenCode runs in: `dir/home`, no network fetches.
fn opencode_env(dir: &Path) -> Vec<(&'static str, String)> {
    let home = dir.join("home");
    vec![
        ("HOME", home.display().to_string()),
        (
            "XDG_CONFIG_HOME",
            home.join(".config").display().to_string(),
        ),
        (
            "XDG_DATA_HOME",
            home.join(".local/share").display().to_string(),
        ),
        (
            "XDG_STATE_HOME",
            home.join(".local/state").display().to_string(),
        ),
        ("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR").to_owned()),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
    ]
}

/// `ask-user hook run opencode -- --prompt …` in a pty, once OpenCode's
/// model has asked [`question`]: shown in OpenCode's UI, waiting in the
/// inbox. Fields in the order they go: the run, then its folder.
struct Asked {
    tui: Tui,
    /// The inbox's question.
    asked: Value,
    inbox: Inbox,
    model: FakeModel,
    _dir: tempfile::TempDir,
}

impl Asked {
    /// Chooses `label` in the inbox; OpenCode's model gets it.
    fn choose_in_the_inbox(&self, label: &str) {
        let answers = json!({"answers": [{"id": "q1", "selected": [label]}]});
        let answered = self
            .inbox
            .answer(self.asked["id"].as_str().unwrap(), &answers);
        assert!(answered.status.success(), "inbox answer: {answered:?}");
        let result = received(&self.model);
        let chosen = format!(r#""Where should this release be deployed?"="{label}""#);
        assert!(result.contains(&chosen), "{result}");
    }

    /// The inbox's question once it no longer waits.
    fn left(&self) -> Value {
        self.inbox.wait_for("the question settled", true, |q| {
            q["id"] == self.asked["id"] && q["state"] != "waiting"
        })
    }
}

fn asked() -> Asked {
    asked_of(FakeModel::calling("question", question()), json!({}))
}

/// As [`asked`], with OpenCode's `model` and `more` in its config; the
/// question is waited for in the inbox (a sub-agent's shows in OpenCode's
/// UI only once its session is opened).
fn asked_of(model: FakeModel, more: Value) -> Asked {
    let inbox = Inbox::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("home/project")).unwrap();
    let main_agents = more.as_object().is_none_or(|more| more.is_empty());
    opencode_home(dir.path(), &model, more);
    let state = inbox.state();
    let config = inbox.agent_config();
    let mut env = opencode_env(dir.path());
    env.push(("ASK_USER_STATE_DIR", state.display().to_string()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let opencode = opencode_program();
    let tui = Tui::start(
        Path::new(env!("CARGO_BIN_EXE_ask-user")),
        &[
            "hook",
            "run",
            "opencode",
            "--config",
            config.to_str().unwrap(),
            "--program",
            opencode.to_str().unwrap(),
            "--",
            "--prompt",
            "Deploy the release",
        ],
        &dir.path().join("home/project"),
        &env,
    );
    // The prompt in its box, OpenCode ready for keys: sent once (a second
    // Enter would answer the question).
    tui.wait_for(&["Deploy the release", "ctrl+p commands"], BOUND);
    tui.keys("\r");
    if main_agents {
        tui.wait_for(
            &["Where should this release be deployed?", "esc dismiss"],
            BOUND,
        );
    }
    let _shown = LogOnPanic(state.join("opencode"));
    let asked = inbox.wait_for("OpenCode's question", false, |q| q["agentWaiting"] == true);
    Asked {
        tui,
        asked,
        inbox,
        model,
        _dir: dir,
    }
}

/// What ask-user logged while OpenCode's UI ran (its logs in this folder),
/// printed if the test panics meanwhile.
struct LogOnPanic(std::path::PathBuf);

impl Drop for LogOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for entry in std::fs::read_dir(&self.0).into_iter().flatten().flatten() {
                let said = std::fs::read_to_string(entry.path()).unwrap_or_default();
                eprintln!("--- {} ---\n{said}", entry.path().display());
            }
        }
    }
}

/// The port of the server of the OpenCode running in `cwd` (its `--port`).
fn opencodes_port(cwd: &Path) -> u16 {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if std::fs::read_link(entry.path().join("cwd")).ok().as_deref() != Some(cwd) {
            continue;
        }
        let Ok(line) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let words: Vec<String> = line
            .split(|&b| b == 0)
            .map(|word| String::from_utf8_lossy(word).into_owned())
            .collect();
        if let Some(at) = words.iter().position(|word| word == "--port") {
            return words[at + 1].parse().unwrap();
        }
    }
    panic!("no OpenCode with --port in {}", cwd.display())
}

/// The status line of `head` (a request's line and headers) sent to
/// 127.0.0.1:`port`.
fn http_status(port: u16, head: &str) -> String {
    use std::io::{BufRead, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(BOUND)).unwrap();
    write!(stream, "{head}Connection: close\r\n\r\n").unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stream)
        .read_line(&mut line)
        .unwrap();
    line
}

/// The tool result OpenCode's model got.
fn received(model: &FakeModel) -> String {
    model.tool_result(BOUND).expect("the model got the result")
}

#[test]
fn opencodes_own_question_is_answered_in_the_inbox_while_its_ui_shows_it() {
    let _one = one_at_a_time();
    let opencode = asked();
    let asked = &opencode.asked;
    assert!(
        asked["agent"].as_str().unwrap().starts_with("OpenCode"),
        "{asked}"
    );
    assert!(
        asked["cwd"].as_str().unwrap().ends_with("project"),
        "{asked}"
    );
    assert_eq!(asked["questions"][0]["options"][1]["label"], "Production");
    // Nothing else on the machine reaches OpenCode's questions: its server
    // takes only the run's password.
    let port = opencodes_port(Path::new(asked["cwd"].as_str().unwrap()));
    for auth in ["", "Authorization: Basic b3BlbmNvZGU6Z3Vlc3M=\r\n"] {
        let said = http_status(
            port,
            &format!("GET /question HTTP/1.1\r\nHost: x\r\n{auth}"),
        );
        assert!(said.starts_with("HTTP/1.1 401"), "{auth:?}: {said}");
    }
    opencode.choose_in_the_inbox("Production");
    // OpenCode's UI no longer asks.
    opencode.tui.wait_for(&[fake_model::DONE], BOUND);
}

/// A sub-agent's question (OpenCode's `task` tool started it; the user's
/// config lets sub-agents ask, which OpenCode denies them by default)
/// waits in the inbox named as the sub-agent, and its answer reaches it.
#[test]
fn a_sub_agents_question_is_named_as_the_sub_agents_and_answered_from_the_inbox() {
    let _one = one_at_a_time();
    let model = FakeModel::delegating_to("question", question());
    let opencode = asked_of(model, json!({"permission": {"question": "allow"}}));
    let asked = &opencode.asked;
    assert_eq!(
        asked["agent"], "OpenCode · sub-agent general (Ask about the deploy)",
        "{asked}"
    );
    opencode.choose_in_the_inbox("Staging");
}

#[test]
fn an_answer_in_opencodes_ui_withdraws_its_question_from_the_inbox() {
    let _one = one_at_a_time();
    let opencode = asked();
    // The first choice, taken in OpenCode's own UI.
    opencode.tui.keys("\r");
    let result = received(&opencode.model);
    assert!(result.contains(r#"="Staging""#), "{result}");
    let left = opencode.left();
    assert_eq!(left["state"], "withdrawn", "{left}");
    assert_eq!(left["settledBy"], "answered in OpenCode", "{left}");
}

/// Esc in OpenCode's UI dismisses its question: the inbox's is withdrawn
/// as dismissed there, never recorded as answered.
#[test]
fn escape_in_opencode_withdraws_its_question_as_dismissed() {
    let _one = one_at_a_time();
    let opencode = asked();
    opencode.tui.keys("\x1b");
    let left = opencode.left();
    assert_eq!(left["state"], "withdrawn", "{left}");
    assert_eq!(left["settledBy"], "dismissed in OpenCode", "{left}");
}

/// Dismissed in the inbox, the question is dismissed in OpenCode as its
/// own Esc dismisses it: its UI stops asking, and its turn ends with no
/// answer for the model.
#[test]
fn a_dismissal_in_the_inbox_dismisses_opencodes_question() {
    let _one = one_at_a_time();
    let opencode = asked();
    let dismissed = opencode
        .inbox
        .dismiss(opencode.asked["id"].as_str().unwrap());
    assert!(dismissed.status.success(), "inbox dismiss: {dismissed:?}");
    let left = opencode.left();
    assert_eq!(left["state"], "cancelled", "{left}");
    // The question gone, the turn over: OpenCode ends a turn whose
    // question was dismissed.
    let screen = opencode
        .tui
        .wait_for(&["Asked 1 question", "ctrl+p commands"], BOUND);
    assert!(!screen.contains("esc dismiss"), "{screen}");
    assert_eq!(opencode.model.tool_result(Duration::ZERO), None);
}

/// The book's OpenCode row registers `ask-user mcp` (here the command
/// built, with a script's answers): a headless `opencode run` has the tool,
/// and its model gets the script's answers.
#[test]
fn the_books_opencode_registration_gives_opencode_the_tool() {
    let _one = one_at_a_time();
    let book = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/clients.md"),
    )
    .unwrap();
    let row = book
        .lines()
        .find(|line| line.starts_with("| OpenCode |"))
        .expect("the book's OpenCode row");
    let mut registration: Value = serde_json::from_str(
        row.split('`')
            .find(|part| part.starts_with("{\"mcp\""))
            .expect("the row's JSON"),
    )
    .unwrap();
    let server = &mut registration["mcp"]["ask-user"];
    assert_eq!(server["command"], json!(["npx", "-y", "ask-user", "mcp"]));
    let (deploy, answers) = crate::clients::deploy();
    let (dir, config) = crate::clients::run_folder(true);
    server["command"] = json!([env!("CARGO_BIN_EXE_ask-user"), "mcp", "--config", config]);
    let model = FakeModel::start(deploy);
    opencode_home(dir.path(), &model, registration);
    let mut run = std::process::Command::new(opencode_program());
    run.args(["run", "Deploy the release"])
        .current_dir(dir.path().join("home"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(opencode_env(dir.path()));
    let output = crate::clients::finish(run);
    assert!(output.status.success(), "opencode run: {output:?}");
    let result = received(&model);
    assert_eq!(
        serde_json::from_str::<Value>(&result).unwrap(),
        answers,
        "{result}"
    );
}
