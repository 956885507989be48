//! The `ask-user` command, run as a user runs it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Runs `ask-user` in `examples/` as a service would: no controlling
/// terminal (a new session), no user configuration.
fn ask_user(args: &[&str], stdin: Option<&str>) -> Output {
    ask_user_in(&examples(), args, stdin)
}

fn ask_user_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new("setsid")
        .arg("--wait")
        .arg(env!("CARGO_BIN_EXE_ask-user"))
        .args(args)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(stdin.unwrap_or_default().as_bytes())
        .unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn schema_prints_the_tool_definition() {
    let output = ask_user(&["schema"], None);
    assert_eq!(output.status.code(), Some(0));
    let definition = stdout_json(&output);
    assert_eq!(definition["name"], "ask_user_question");
    assert!(definition["description"].as_str().unwrap().len() > 200);
    assert_eq!(definition["inputSchema"]["type"], "object");
    assert_eq!(definition["outputSchema"]["type"], "object");
}

#[test]
fn ask_answered_from_a_file_prints_the_result_and_exits_0() {
    let output = ask_user(
        &["ask", "deploy.json", "--answers", "deploy.answers.json"],
        None,
    );
    assert_success(&output);
    let result = stdout_json(&output);
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["content"],
        json!([{"type":"text","text":
            r#"{"answers":[{"id":"target","selected":["Staging (Recommended)"]},{"id":"checks","selected":["Unit tests","Integration tests"],"custom":"smoke test the login page"},{"id":"note","selected":[],"custom":"Mention the new retry settings."}]}"#}])
    );
    assert_eq!(
        result["structuredContent"]["answers"][1]["custom"],
        "smoke test the login page"
    );
    assert!(output.stderr.is_empty());
}

#[test]
fn ask_reads_arguments_from_standard_input() {
    let arguments = r#"{"questions":[{"id":"target","question":"Where?","options":[{"label":"Staging (Recommended)"}]}]}"#;
    let output = ask_user(
        &["ask", "-", "--answers", "deploy.answers.json"],
        Some(arguments),
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout_json(&output)["content"][0]["text"],
        r#"{"answers":[{"id":"target","selected":["Staging (Recommended)"]}]}"#
    );
}

#[test]
fn without_a_terminal_the_terminal_answerer_passes() {
    let output = ask_user(&["ask", "deploy.json"], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout_json(&output)["error"]["code"], "NO_PROVIDER");
    // Standard error says why, for whoever runs the command.
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains(
            "no answerer took the question (terminal: no terminal (/dev/tty cannot be opened"
        ),
        "{said}"
    );
}

/// A folder with the example's `deploy.json` and a config `name` of `text`.
fn deploy_with(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        examples().join("deploy.json"),
        dir.path().join("deploy.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    dir
}

/// A config that names no answerer (only the inbox's notifications, say)
/// keeps the terminal as the chain: here, with no terminal, it passes, and
/// says so.
#[test]
fn a_config_without_answerers_keeps_the_terminal() {
    let dir = deploy_with(
        "notify.toml",
        "[inbox.notify]\nntfy = \"https://ntfy.example/topic\"\n",
    );
    let output = ask_user_in(
        dir.path(),
        &["ask", "deploy.json", "--config", "notify.toml"],
        None,
    );
    assert_eq!(stdout_json(&output)["error"]["code"], "NO_PROVIDER");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("(terminal: no terminal"), "{said}");
}

/// With no inbox running, an agent whose chain is the inbox is told so
/// once, not once by the notice and again by the log.
#[test]
fn no_inbox_running_is_said_once() {
    let dir = deploy_with("inbox.toml", "[[answerer]]\nkind = \"inbox\"\n");
    let state = dir.path().join("state").display().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args([
            "ask",
            "deploy.json",
            "--config",
            "inbox.toml",
            "--timeout",
            "1s",
        ])
        .env("ASK_USER_STATE_DIR", &state)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(stdout_json(&output)["error"]["code"], "ASK_TIMED_OUT");
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(said.matches("no inbox is running").count(), 1, "{said}");
}

#[test]
fn an_error_result_is_printed_and_exits_1() {
    let output = ask_user(&["ask", "deploy.json"], None);
    assert_eq!(output.status.code(), Some(1));
    let result = stdout_json(&output);
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["error"],
        json!({"name":"UserQuestionError","code":"NO_PROVIDER"})
    );

    let output = ask_user(&["ask", "-"], Some("{\"questions\": 3}"));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout_json(&output)["error"]["code"], "INVALID_ARGS");
}

#[test]
fn answers_that_cover_only_some_questions_are_passed_on() {
    let arguments =
        r#"{"questions":[{"id":"target","question":"Where?"},{"id":"other","question":"?"}]}"#;
    let output = ask_user(
        &["ask", "-", "--answers", "deploy.answers.json"],
        Some(arguments),
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout_json(&output)["error"]["code"], "NO_PROVIDER");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("script: no answer or rule for question \"other\"; terminal: no terminal"),
        "{said}"
    );
}

/// `ask --request`: the book's recipe (embedding/subprocess.md) as
/// written, its request asked as the seam's, a plan's detail and intent
/// reaching the answerer (a bridge that answers only a plan review with
/// its detail, so nothing is dropped on the way); its answers checked as the
/// tool's are; a request that cannot be read is a usage error.
#[test]
fn ask_request_asks_the_seams_request_as_it_is() {
    let page =
        std::fs::read_to_string(examples().join("../docs/src/embedding/subprocess.md")).unwrap();
    let recipe = page
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .find(|block| block.contains("--request"))
        .expect("the book's recipe for ask --request");
    let request = recipe
        .split('\'')
        .nth(1)
        .expect("the recipe's request, in single quotes");
    assert!(recipe.contains("| ask-user ask --request - --session my-agent-42"));
    let dir = tempfile::tempdir().unwrap();
    let bridge = dir.path().join("bridge.py");
    std::fs::write(
        &bridge,
        r#"import json, sys
for line in sys.stdin:
    frame = json.loads(line)
    if frame.get("type") != "waterfall":
        continue
    [q] = frame["request"]["questions"]
    fits = q.get("detail") == "1. Migrate" and q.get("intent") == {"kind": "plan-review", "approve": "Approve"}
    answers = [{"id": q["id"], "selected": ["Approve"] if fits else ["Nope"]}]
    outcome = {"kind": "result", "value": {"answers": answers}}
    print(json.dumps({"eventId": frame["eventId"], "outcome": outcome}), flush=True)
"#,
    )
    .unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[answerer]]\nkind = \"bridge\"\ncommand = [\"python3\", {:?}]\n",
            bridge.display().to_string()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let args = [
        "ask",
        "--request",
        "-",
        "--session",
        "my-agent-42",
        "--config",
        config,
    ];
    let output = ask_user(&args, Some(request));
    assert_success(&output);
    let result = stdout_json(&output);
    assert_eq!(
        result["structuredContent"],
        json!({"answers": [{"id": "plan", "selected": ["Approve"]}]})
    );
    assert_eq!(
        result["content"][0]["text"],
        r#"{"answers":[{"id":"plan","selected":["Approve"]}]}"#
    );

    // The bridge's answer to another plan is not one of its options:
    // checked, as the tool's answers are.
    let other = request.replace("1. Migrate", "2. Drop the table");
    assert_error_result(&ask_user(&args, Some(&other)), "INVALID_ANSWER", "\"Nope\"");
    // The seam's checks, in their order: an intent without its plan, no
    // questions.
    let bare = request.replace(r#""detail":"1. Migrate","#, "");
    assert_error_result(&ask_user(&args, Some(&bare)), "BAD_INTENT", "no detail");
    let empty = ask_user(&args, Some(r#"{"questions":[]}"#));
    assert_error_result(&empty, "EMPTY_QUESTIONS", "at least one question");
    // A request the host got wrong is the host's mistake: a usage error.
    let wrong = ask_user(&args, Some(r#"{"questions":[{"id":1}]}"#));
    assert_usage_error(
        &wrong,
        "the request cannot be read: invalid type: integer `1`",
    );
}

/// The command succeeded (exit 0); else what it said.
fn assert_success(output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The command printed an error result with `code` whose text says `says`
/// (exit 1).
fn assert_error_result(output: &Output, code: &str, says: &str) {
    assert_eq!(output.status.code(), Some(1));
    let result = stdout_json(output);
    assert_eq!(result["error"]["code"], code, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(says), "{text}");
}

fn assert_usage_error(output: &Output, says: &str) {
    assert_eq!(output.status.code(), Some(2));
    assert!(
        output.stdout.is_empty(),
        "nothing on stdout for a usage error"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("ask-user: "), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
}

#[test]
fn endless_arguments_are_read_only_to_the_limit() {
    let output = ask_user(&["ask", "/dev/zero"], None);
    assert_error_result(
        &output,
        "INVALID_ARGS",
        "over the host's limit of 1048576 bytes",
    );
}

/// Arguments are the model's: bytes that are not UTF-8 are `INVALID_ARGS`
/// naming where, and a cut at the size limit inside a character is still
/// "too large", never a usage error.
#[test]
fn arguments_that_are_not_utf8_are_invalid_args() {
    let dir = tempfile::tempdir().unwrap();
    let latin1 = dir.path().join("latin1.json");
    std::fs::write(
        &latin1,
        b"{\"questions\":[{\"id\":\"q\",\"question\":\"Caf\xe9?\"}]}",
    )
    .unwrap();
    let output = ask_user(&["ask", latin1.to_str().unwrap()], None);
    assert_error_result(
        &output,
        "INVALID_ARGS",
        "not UTF-8 text (from byte offset 39 on)",
    );

    let wide = dir.path().join("wide.json");
    std::fs::write(&wide, "é".repeat(524_289)).unwrap();
    let output = ask_user(&["ask", wide.to_str().unwrap()], None);
    assert_error_result(
        &output,
        "INVALID_ARGS",
        "over the host's limit of 1048576 bytes",
    );
}

/// An answers file is held to the canonical shape: a typo is refused, not
/// read as a skip, and a label the question does not offer is
/// `INVALID_ANSWER` like any answer that does not fit.
#[test]
fn an_answers_file_that_does_not_fit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("typo.json");
    std::fs::write(&typo, r#"{"answers":[{"id":"target","custon":"prod"}]}"#).unwrap();
    let output = ask_user(
        &["ask", "deploy.json", "--answers", typo.to_str().unwrap()],
        None,
    );
    assert_usage_error(&output, "unknown field `custon`");

    let unoffered = dir.path().join("unoffered.json");
    std::fs::write(
        &unoffered,
        r#"{"answers":[{"id":"q","selected":["Mars"]}]}"#,
    )
    .unwrap();
    let arguments =
        r#"{"questions":[{"id":"q","question":"Where?","options":[{"label":"Earth"}]}]}"#;
    let output = ask_user(
        &["ask", "-", "--answers", unoffered.to_str().unwrap()],
        Some(arguments),
    );
    assert_error_result(&output, "INVALID_ANSWER", "\"Mars\"");
}

#[test]
fn an_unreadable_file_exits_2_with_one_line() {
    assert_usage_error(
        &ask_user(&["ask", "missing.json"], None),
        "cannot read the arguments missing.json",
    );
    assert_usage_error(
        &ask_user(&["ask", "deploy.json", "--answers", "missing.json"], None),
        "cannot read missing.json",
    );
    assert_usage_error(
        &ask_user(&["ask", "deploy.json", "--answers", "deploy.json"], None),
        "deploy.json: the answers are not of the shape",
    );
    assert_usage_error(
        &ask_user(&["--component", "deploy.json", "schema"], None),
        "cannot load the component",
    );
    assert_usage_error(
        &ask_user(&["ask", "deploy.json", "--timeout", "0"], None),
        "--timeout: \"0\" is no time at all",
    );
    assert_usage_error(
        &ask_user(&["ask", "deploy.json", "--timeout", "15x"], None),
        "--timeout: \"15x\" is not a duration",
    );
    assert_usage_error(
        &ask_user(&["ask", "deploy.json", "--config", "missing.toml"], None),
        "missing.toml",
    );
}

/// A config file in a directory of its own, removed when dropped.
struct ConfigFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for ConfigFile {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

/// Writes `toml` to a fresh `config.toml`.
fn config_file(name: &str, toml: &str) -> ConfigFile {
    let dir = tempfile::Builder::new()
        .prefix(&format!("ask-user-cli-{name}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, toml).unwrap();
    ConfigFile { _dir: dir, path }
}

fn ask_with_config(config: &Path, file: &str, stdin: Option<&str>) -> Output {
    ask_user(&["ask", file, "--config", config.to_str().unwrap()], stdin)
}

#[test]
fn a_config_with_script_rules_answers() {
    let config = config_file(
        "rules",
        r#"
[[answerer]]
kind = "script"
rules = [
  { question = "(?i)deployed", recommended = true },
  { id = "checks", select = ["Unit tests"], custom = "and lint" },
  { id = "note", custom = "none" },
]
"#,
    );
    let output = ask_with_config(&config, "deploy.json", None);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(
        stdout_json(&output)["content"][0]["text"],
        r#"{"answers":[{"id":"target","selected":["Staging (Recommended)"]},{"id":"checks","selected":["Unit tests"],"custom":"and lint"},{"id":"note","selected":[],"custom":"none"}]}"#
    );
}

#[test]
fn script_rules_never_invent_an_answer() {
    // "recommended" applies only where an option is marked; no rule covers
    // "checks" and "note", so the request passes on and nobody answers.
    let config = config_file(
        "norule",
        "[[answerer]]\nkind = \"script\"\nrules = [{ question = \".\", recommended = true }]\n",
    );
    let output = ask_with_config(&config, "deploy.json", None);
    assert_eq!(stdout_json(&output)["error"]["code"], "NO_PROVIDER");
}

#[test]
fn a_script_rule_can_reject_with_a_code() {
    let config = config_file(
        "reject",
        "[[answerer]]\nkind = \"script\"\nrules = [{ id = \"target\", reject = \"ASK_CANCELLED\", message = \"not in CI\" }]\n",
    );
    let result = stdout_json(&ask_with_config(&config, "deploy.json", None));
    assert_eq!(result["error"]["code"], "ASK_CANCELLED");
    assert_eq!(result["content"][0]["text"], "Error: not in CI");
}

#[test]
fn a_bad_config_names_its_line() {
    let cases = [
        ("timeout = \"soon\"\n", 1, "not a duration"),
        (
            "[[answerer]]\nkind = \"terminal\"\n\n[[answerer]]\nkind = \"carrier-pigeon\"\n",
            4,
            "unknown answerer kind",
        ),
        (
            "[[answerer]]\nkind = \"terminal\"\ncommand = [\"x\"]\n",
            3,
            "a terminal answerer: unknown field `command`, expected `device`",
        ),
        (
            "\n\n[[answerer]]\nkind = \"script\"\nrules = [{ id = \"a\", question = \"b\", pass = true }]\n",
            5,
            "exactly one of `id` or `question`",
        ),
        (
            "[[answerer]]\nkind = \"script\"\nrules = [{ question = \"(\", pass = true }]\n",
            3,
            "not a regex",
        ),
        (
            "[[answerer]]\nkind = \"bridge\"\n",
            1,
            "either a `command` or a `socket`",
        ),
        (
            "[[answerer]]\nkind = \"web\"\ncommand = [\"x\"]\n",
            3,
            "a web answerer: unknown field `command`, expected one of `bind`, `port`, `grace`",
        ),
        (
            "[[answerer]]\nkind = \"web\"\ngrace = \"a while\"\n",
            1,
            "not a duration",
        ),
        ("colour = true\n", 1, "unknown field `colour`"),
        (
            "[[answerer]]\nkind = \"terminal\"\n\n[sandbox]\nmax_asks_per_call = 0\n",
            4,
            "sandbox `max_asks_per_call` must be above zero",
        ),
        ("[sandbox]\ncpu_deadline = \"soon\"\n", 1, "not a duration"),
        ("\n[sandbox]\nfuel = 10\n", 3, "unknown field `fuel`"),
    ];
    for (toml, line, says) in cases {
        let config = config_file("bad", toml);
        let output = ask_with_config(&config, "deploy.json", None);
        assert_usage_error(&output, &format!("config.toml line {line}: "));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{toml}: {stderr}");
    }
}

#[test]
fn a_config_web_answerer_serves_its_page_and_passes_on_when_nobody_opens_it() {
    let rules = r#"rules = [{ question = ".", custom = "from the script" }]"#;
    for (bind, warned) in [("127.0.0.1", false), ("0.0.0.0", true)] {
        let config = config_file(
            "web",
            &format!(
                "[[answerer]]\nkind = \"web\"\nbind = \"{bind}\"\ngrace = \"200ms\"\n\n\
                 [[answerer]]\nkind = \"script\"\n{rules}\n"
            ),
        );
        let output = ask_with_config(&config, "deploy.json", None);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains("answer in your browser: http://127.0.0.1:"),
            "{stderr}"
        );
        assert!(stderr.contains("?token="), "{stderr}");
        assert_eq!(stderr.contains("WARNING"), warned, "{stderr}");
        let result = stdout_json(&output);
        assert_eq!(
            result["structuredContent"]["answers"][0]["custom"],
            "from the script"
        );
    }
}

/// `ask-user ask --web FILE` running, with its page's address.
struct WebRun {
    child: std::process::Child,
    address: String,
    token: String,
}

impl WebRun {
    fn start(file: &str) -> WebRun {
        use std::io::BufRead;
        let mut child = Command::new("setsid")
            .arg(env!("CARGO_BIN_EXE_ask-user"))
            .args(["ask", "--web", file])
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
            .current_dir(examples())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            let read = stderr.read_line(&mut line).unwrap();
            assert_ne!(
                read, 0,
                "ask-user ended before it printed the page's address"
            );
            if let Some(url) = line
                .trim()
                .strip_prefix("ask-user: answer in your browser: ")
            {
                break url.to_owned();
            }
        };
        // Whatever else it says is drained, so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let rest = url.strip_prefix("http://").unwrap();
        let (address, token) = rest.split_once("/?token=").unwrap();
        WebRun {
            child,
            address: address.to_owned(),
            token: token.to_owned(),
        }
    }

    /// Opens the page's event stream and returns it with the event id of
    /// the first question shown on it.
    fn first_question(&self) -> (std::net::TcpStream, String) {
        use std::io::Read;
        let mut events = std::net::TcpStream::connect(&self.address).unwrap();
        events
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        write!(
            events,
            "GET /events?token={} HTTP/1.1\r\nHost: {}\r\n\r\n",
            self.token, self.address
        )
        .unwrap();
        let mut seen = String::new();
        let marker = r#""type":"waterfall""#;
        while !seen.contains(marker) || !seen[seen.find(marker).unwrap()..].contains('\n') {
            let mut buffer = [0; 4096];
            let read = events
                .read(&mut buffer)
                .expect("the question is shown in time");
            assert_ne!(read, 0, "the event stream ended: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
        let event = seen.split(r#""eventId":""#).nth(1).unwrap();
        let event = event.split('"').next().unwrap().to_owned();
        (events, event)
    }

    /// A connection with an answer posted on it, ready to send.
    fn answer_request(&self, event: &str, label: &str) -> String {
        let body = json!({"eventId": event, "outcome": {"kind": "result",
            "value": {"answers": [{"id": "q", "selected": [label]}]}}})
        .to_string();
        format!(
            "POST /answer HTTP/1.1\r\nHost: {}\r\nx-ask-user-token: {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.address,
            self.token,
            body.len()
        )
    }

    fn finish(mut self) -> Output {
        let mut stdout = Vec::new();
        std::io::Read::read_to_end(self.child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        let status = self.child.wait().unwrap();
        Output {
            status,
            stdout,
            stderr: Vec::new(),
        }
    }
}

impl Drop for WebRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Thirty answers posted at the same moment: one wins, and every other gets
/// its 409, though the process ends right after the first (before, the
/// losers' connections were reset as it exited).
#[test]
fn thirty_answers_at_once_one_wins_and_every_other_gets_409() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.json");
    std::fs::write(
        &file,
        r#"{"questions":[{"id":"q","question":"Which?","options":[{"label":"A"},{"label":"B"}]}]}"#,
    )
    .unwrap();
    let run = WebRun::start(file.to_str().unwrap());
    let (_events, event) = run.first_question();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(30));
    let posts: Vec<_> = (0..30)
        .map(|n| {
            let mut stream = std::net::TcpStream::connect(&run.address).unwrap();
            let request = run.answer_request(&event, if n % 2 == 0 { "A" } else { "B" });
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                stream.write_all(request.as_bytes())?;
                let mut response = String::new();
                stream.read_to_string(&mut response)?;
                Ok::<_, std::io::Error>(response)
            })
        })
        .collect();
    let mut statuses: Vec<String> = posts
        .into_iter()
        .map(|post| {
            let response = post.join().unwrap().expect("every post gets a reply");
            response.get(9..12).unwrap_or(&response).to_owned()
        })
        .collect();
    statuses.sort();
    assert_eq!(statuses[0], "200", "{statuses:?}");
    assert!(statuses[1..].iter().all(|s| s == "409"), "{statuses:?}");
    let output = run.finish();
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout_json(&output)["structuredContent"]["answers"][0]["selected"][0].is_string());
}

/// A bridge that records its pid and every frame it gets in `log`, says
/// on its standard error (the command's) when a question has reached it,
/// and never answers. It holds that standard error until it exits, so the
/// command's standard error ends only once the bridge is gone too.
fn silent_bridge(log: &Path) -> ConfigFile {
    let program = "import json, os, sys\n\
                   log = open(sys.argv[1], 'a')\n\
                   log.write(json.dumps({'pid': os.getpid()}) + '\\n'); log.flush()\n\
                   for line in sys.stdin:\n    log.write(line); log.flush()\n    \
                   if json.loads(line)['type'] == 'waterfall':\n        \
                   sys.stderr.write(QUESTION_ARRIVED + '\\n'); sys.stderr.flush()\n"
        .replace("QUESTION_ARRIVED", &format!("{QUESTION_ARRIVED:?}"));
    config_file(
        "silent",
        &format!(
            "[[answerer]]\nkind = \"bridge\"\ncommand = [\"python3\", \"-c\", {program:?}, {:?}]\n",
            log.display().to_string()
        ),
    )
}

/// The frames the silent bridge logged, and its pid.
fn bridge_log(log: &Path) -> (u32, Vec<Value>) {
    let lines: Vec<Value> = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pid = lines.first().and_then(|l| l["pid"].as_u64()).unwrap_or(0) as u32;
    (pid, lines)
}

/// Whether process `pid` is gone (or a zombie nobody has reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .trim_start()
            .starts_with('Z'),
    }
}

/// What the silent bridge writes to standard error when a question arrives.
const QUESTION_ARRIVED: &str = "silent bridge: a question arrived";

#[test]
fn a_timed_out_ask_always_sends_its_cancel_and_stops_the_bridge() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("frames.jsonl");
    let config = silent_bridge(&log);
    let output = ask_user(
        &[
            "ask",
            "--config",
            config.to_str().unwrap(),
            "--timeout",
            "500ms",
            "deploy.json",
        ],
        None,
    );
    assert_eq!(stdout_json(&output)["error"]["code"], "ASK_TIMED_OUT");
    let (pid, frames) = bridge_log(&log);
    let types: Vec<&str> = frames[1..]
        .iter()
        .map(|f| f["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["ready", "waterfall", "cancel"]);
    assert_eq!(frames[2]["eventId"], frames[3]["eventId"]);
    // The output was read to its end: the bridge, which held the command's
    // standard error, has exited.
    assert!(ended(pid), "the bridge outlived the command");
}

/// SIGTERM and SIGHUP end the command as Ctrl-C does: the question is
/// withdrawn (the bridge gets its cancel), the bridge is stopped, and the
/// result is printed (before, SIGTERM killed the command with no result and
/// left the bridge running).
#[test]
fn sigterm_and_sighup_abort_the_ask_and_stop_the_bridge() {
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("frames.jsonl");
        let config = silent_bridge(&log);
        let mut child = Command::new(env!("CARGO_BIN_EXE_ask-user"))
            .args(["ask", "--config", config.to_str().unwrap(), "deploy.json"])
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
            .current_dir(examples())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Standard error, line by line, until every holder (the command and
        // its bridge) has closed it.
        let (lines, said) = std::sync::mpsc::channel();
        let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(stderr).map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let bound = std::time::Duration::from_secs(30);
        while said
            .recv_timeout(bound)
            .expect("the question reaches the bridge")
            != QUESTION_ARRIVED
        {}
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(1), "signal {signal}");
        assert_eq!(stdout_json(&output)["error"]["code"], "ASK_ABORTED");
        let (pid, frames) = bridge_log(&log);
        assert_eq!(frames.last().unwrap()["type"], "cancel", "signal {signal}");
        loop {
            match said.recv_timeout(bound) {
                Ok(_) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(timeout) => panic!("the bridge still holds standard error: {timeout}"),
            }
        }
        assert!(ended(pid), "the bridge outlived the command");
    }
}

/// A port that is taken is named with what wanted it, in one line.
#[test]
fn a_taken_port_names_the_answerer_or_server_and_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let port = taken.local_addr().unwrap().port().to_string();
    let output = ask_user(&["ask", "--web", "--web-port", &port, "deploy.json"], None);
    assert_usage_error(
        &output,
        &format!("cannot start answerer 1 (web): the web answerer cannot listen on {address}"),
    );
    let output = ask_user(&["mcp", "--http", &address], None);
    assert_usage_error(&output, &format!("ask-user mcp cannot listen on {address}"));
}

/// The compiled component is cached in the user's private cache directory,
/// and a cache directory others may write is not used (the command still
/// answers, compiling, and says why).
#[test]
fn the_compiled_component_is_cached_privately() {
    let home = tempfile::tempdir().unwrap();
    let run = |cache: &Path| {
        Command::new(env!("CARGO_BIN_EXE_ask-user"))
            .args(["ask", "--answers", "deploy.answers.json", "deploy.json"])
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .env("XDG_CACHE_HOME", cache)
            .current_dir(examples())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let cache = home.path().join("cache");
    for _ in 0..2 {
        let output = run(&cache);
        assert_success(&output);
    }
    let dir = cache.join("ask-user").join("compiled");
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(entries.len(), 1);
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let output = run(&cache);
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not caching compiled components"),
        "{stderr}"
    );
    assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
}

/// A host in another language gets the component from the command: the
/// same bytes as the built-in one, a component that loads.
#[test]
fn the_component_command_writes_the_built_in_component() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ask_user_tool.wasm");
    let output = ask_user(&["component", "--out", file.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(std::fs::read(&file).unwrap(), ask_user::COMPONENT);
    let output = ask_user(&["component"], None);
    assert_eq!(output.stdout, ask_user::COMPONENT);
    let output = ask_user(&["schema", "--component", file.to_str().unwrap()], None);
    assert_eq!(stdout_json(&output)["name"], "ask_user_question");
    let output = ask_user(&["component", "--out", "/nonexistent/dir/x.wasm"], None);
    assert_usage_error(&output, "cannot write /nonexistent/dir/x.wasm");
}

#[test]
fn a_config_sets_the_sandbox_limits() {
    let answers = "[[answerer]]\nkind = \"script\"\nanswers = \"answers.json\"\n";
    for (limit, code) in [
        ("max_arguments_bytes = 100", "INVALID_ARGS"),
        ("max_request_bytes = 100", "GUEST_REQUEST_TOO_LARGE"),
        ("max_output_bytes = 100", "GUEST_OUTPUT_TOO_LARGE"),
    ] {
        let config = config_file("sandbox", &format!("{answers}\n[sandbox]\n{limit}\n"));
        std::fs::copy(
            examples().join("deploy.answers.json"),
            config.with_file_name("answers.json"),
        )
        .unwrap();
        let output = ask_with_config(&config, "deploy.json", None);
        assert_eq!(output.status.code(), Some(1), "{limit}");
        assert_eq!(stdout_json(&output)["error"]["code"], code, "{limit}");
    }
}

#[test]
fn the_example_config_works_from_any_directory() {
    // Its bridge command names `bridge.py` beside it: a bridge runs in the
    // configuration file's folder, wherever ask-user was started.
    let config = examples().join("config.toml");
    let arguments = r#"{"questions":[{"id":"target","question":"Where?","options":[{"label":"Staging (Recommended)"},{"label":"Prod"}]}]}"#;
    let output = ask_user_in(
        &std::env::temp_dir(),
        &["ask", "-", "--config", config.to_str().unwrap()],
        Some(arguments),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout_json(&output)["structuredContent"]["answers"],
        json!([{"id":"target","selected":["Staging (Recommended)"]}])
    );
}

#[test]
fn a_config_named_by_its_bare_file_name_runs_its_bridge_beside_it() {
    let arguments = r#"{"questions":[{"id":"target","question":"Where?","options":[{"label":"Staging (Recommended)"},{"label":"Prod"}]}]}"#;
    let output = ask_user(&["ask", "-", "--config", "config.toml"], Some(arguments));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout_json(&output)["structuredContent"]["answers"],
        json!([{"id":"target","selected":["Staging (Recommended)"]}])
    );
}

#[test]
fn a_config_bridge_answers_and_the_audit_trail_records_each_ask() {
    let trail = tempfile::tempdir().unwrap();
    let audit = trail.path().join("asks.jsonl");
    let config = config_file(
        "bridge",
        &format!(
            "audit = {:?}\n[[answerer]]\nkind = \"bridge\"\ncommand = [\"python3\", {:?}]\n",
            audit,
            examples().join("bridge.py")
        ),
    );
    let arguments = r#"{"questions":[{"id":"target","question":"Where?","options":[{"label":"Staging (Recommended)"},{"label":"Prod"}]}]}"#;
    let config_arg = config.to_str().unwrap();
    let output = ask_user(
        &["ask", "-", "--config", config_arg, "--session", "deploy-7"],
        Some(arguments),
    );
    assert_success(&output);
    let output = ask_with_config(&config, "deploy.json", None);
    assert_eq!(stdout_json(&output)["error"]["code"], "NO_PROVIDER");

    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let keys: Vec<&str> = lines[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "time",
            "caller",
            "questions",
            "answerer",
            "outcome",
            "durationMs"
        ]
    );
    // The session given, else a fresh, random one for each run (128 bits:
    // no other process, here or elsewhere, is ever taken for this one).
    assert_eq!(lines[0]["caller"], "deploy-7");
    let fresh = lines[1]["caller"].as_str().unwrap();
    assert!(
        fresh.len() == 36 && fresh.starts_with("ask-"),
        "a random session: {fresh}"
    );
    // The trail holds questions and answers: this user's alone.
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&audit).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the audit trail is private");
    assert_eq!(lines[0]["answerer"], "bridge");
    assert_eq!(lines[0]["questions"][0]["id"], "target");
    assert_eq!(
        lines[0]["outcome"],
        json!({"kind":"answered","answers":[{"id":"target","selected":["Staging (Recommended)"]}]})
    );
    assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(lines[1]["answerer"], Value::Null);
    assert_eq!(lines[1]["outcome"]["kind"], "failed");
    assert_eq!(lines[1]["outcome"]["code"], "NO_PROVIDER");
}

#[test]
fn bad_usage_exits_2() {
    let output = ask_user(&["frobnicate"], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unrecognized subcommand"));
}

#[test]
fn help_teaches_by_example() {
    let output = ask_user(&["--help"], None);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    for needle in [
        "schema",
        "ask",
        "--answers",
        "Exit status",
        "examples/deploy.json",
    ] {
        assert!(help.contains(needle), "help lacks {needle}: {help}");
    }
}

#[test]
fn endless_answer_and_config_files_are_refused_not_read_for_ever() {
    let output = ask_user(&["ask", "deploy.json", "--answers", "/dev/zero"], None);
    assert_usage_error(
        &output,
        "cannot read /dev/zero: it is larger than 4194304 bytes",
    );
    let output = ask_user(&["ask", "deploy.json", "--config", "/dev/zero"], None);
    assert_usage_error(
        &output,
        "cannot read the config /dev/zero: it is larger than 1048576 bytes",
    );
}

#[test]
fn a_full_standard_output_is_a_one_line_error_not_a_panic() {
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args([
            "ask",
            "deploy.json",
            "--answers",
            "deploy.answers.json",
            "--config",
            "/dev/null",
        ])
        .current_dir(examples())
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim(),
        "ask-user: cannot write the result to standard output: No space left on device (os error 28)"
    );
}

/// A headless run whose Claude Code sends a question we cannot read: that
/// one request is denied, saying why, and the run goes on to its next
/// question and its end (it was ended whole, exit 2, Claude Code killed).
#[test]
fn an_unreadable_question_of_a_headless_run_is_denied_and_the_run_goes_on() {
    let config = config_file(
        "headless",
        "[[answerer]]\nkind = \"script\"\nrules = [{ question = \".\", select = [\"Yes\"] }]\n",
    );
    // Claude Code's side of the stdio protocol: the prompt, a question of
    // no text, a good one, then the two replies as the run's result.
    let program = config._dir.path().join("claude");
    std::fs::write(
        &program,
        r#"#!/usr/bin/env python3
import json, sys
prompt = json.loads(sys.stdin.readline())
def ask(rid, questions):
    print(json.dumps({"type": "control_request", "request_id": rid, "request": {
        "subtype": "can_use_tool", "tool_name": "AskUserQuestion",
        "input": {"questions": questions}}}), flush=True)
    return json.loads(sys.stdin.readline())["response"]["response"]
bad = ask("r1", [{"header": "no text"}])
good = ask("r2", [{"question": "Go?", "options": [{"label": "Yes"}, {"label": "No"}]}])
print(json.dumps({"type": "result", "is_error": False,
                  "result": json.dumps([bad, good])}), flush=True)
"#,
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let output = ask_user(
        &[
            "hook",
            "headless",
            "claude-code",
            "Deploy",
            "--config",
            config.path.to_str().unwrap(),
            "--program",
            program.to_str().unwrap(),
        ],
        None,
    );
    assert_success(&output);
    let replies: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(replies[0]["behavior"], "deny");
    let message = replies[0]["message"].as_str().unwrap();
    assert!(message.contains("question 1"), "{message}");
    assert_eq!(replies[1]["behavior"], "allow");
    assert_eq!(replies[1]["updatedInput"]["answers"], json!({"Go?": "Yes"}));
}

/// `inbox install-service` writes this user's systemd unit that keeps the
/// inbox running (its state folder with it), says how to start it, leaves
/// a file that is not its own alone, and `uninstall-service` takes out
/// exactly what it wrote.
#[test]
fn the_inbox_is_kept_running_by_a_service_of_the_users() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config");
    let state = home.path().join("my state");
    // A login with a systemd user session: its manager's socket is there.
    let runtime = home.path().join("run");
    let command = |verb: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
        command
            .args(["inbox", verb])
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", &config)
            .env("ASK_USER_STATE_DIR", &state)
            .env("XDG_RUNTIME_DIR", &runtime);
        command
    };
    let run = |verb: &str| command(verb).output().unwrap();
    let said = |output: &Output| String::from_utf8_lossy(&output.stderr).into_owned();
    let unit = config.join("systemd/user/ask-user-inbox.service");

    // Without one (a container, WSL, SSH), it says what to do instead
    // and writes nothing.
    for runtime in [None, Some(home.path().join("empty"))] {
        let mut install = command("install-service");
        match &runtime {
            Some(dir) => install.env("XDG_RUNTIME_DIR", dir),
            None => install.env_remove("XDG_RUNTIME_DIR"),
        };
        let refused = install.output().unwrap();
        assert_eq!(refused.status.code(), Some(2), "{}", said(&refused));
        assert!(
            said(&refused).contains("no systemd user session")
                && said(&refused).contains("tmux")
                && said(&refused).contains("loginctl enable-linger"),
            "{}",
            said(&refused)
        );
        assert!(!unit.exists());
    }
    std::fs::create_dir_all(runtime.join("systemd")).unwrap();
    std::fs::write(runtime.join("systemd/private"), "").unwrap();

    let installed = run("install-service");
    assert!(installed.status.success(), "{}", said(&installed));
    assert!(
        said(&installed).contains("systemctl --user enable --now ask-user-inbox"),
        "{}",
        said(&installed)
    );
    let text = std::fs::read_to_string(&unit).unwrap();
    let program = env!("CARGO_BIN_EXE_ask-user");
    assert!(
        text.contains(&format!("ExecStart=\"{program}\" inbox serve\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Environment=ASK_USER_STATE_DIR=\"{}\"\n",
            state.display()
        )),
        "{text}"
    );
    assert!(text.contains("Restart=on-failure") && text.contains("WantedBy=default.target"));
    // systemd itself reads it, where it is installed.
    if let Ok(verified) = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .output()
    {
        assert!(
            verified.status.success() && verified.stderr.is_empty(),
            "{}",
            said(&verified)
        );
    }
    let again = run("install-service");
    assert!(again.status.success() && said(&again).contains("already"));

    let removed = run("uninstall-service");
    assert!(removed.status.success(), "{}", said(&removed));
    assert!(!unit.exists());

    // Somebody else's unit of that name stays as it is.
    std::fs::write(&unit, "[Service]\nExecStart=/bin/true\n").unwrap();
    let refused = run("install-service");
    assert_eq!(refused.status.code(), Some(2), "{}", said(&refused));
    assert!(
        said(&refused).contains("not ask-user's"),
        "{}",
        said(&refused)
    );
    assert_eq!(run("uninstall-service").status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(&unit).unwrap(),
        "[Service]\nExecStart=/bin/true\n"
    );
}

/// `--web` is the page and the terminal: the config's answerers are not
/// started, so none says that questions go elsewhere (an inbox that would
/// never be asked, as the page waits for as long as it takes).
#[test]
fn with_web_the_configs_answerers_are_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[[answerer]]\nkind = \"inbox\"\n").unwrap();
    let config = config.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "ask",
            "--answers",
            "deploy.answers.json",
            "--config",
            config,
        ];
        args.extend(extra);
        args.push("deploy.json");
        let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
        command
            .args(&args)
            .env("ASK_USER_STATE_DIR", dir.path().join("state"))
            .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
            .current_dir(examples())
            .stdin(Stdio::null());
        command.output().unwrap()
    };
    let without = run(&[]);
    assert!(without.status.success());
    assert!(
        String::from_utf8_lossy(&without.stderr).contains("inbox"),
        "the inbox answerer says where questions go: {without:?}"
    );
    let with = run(&["--web"]);
    assert!(with.status.success(), "{with:?}");
    let said = String::from_utf8_lossy(&with.stderr);
    assert!(
        !said.contains("inbox") && said.contains("answer in your browser"),
        "{said}"
    );
}

/// `hook install` says so when the user's config names no answerer the
/// hooks can ask (the terminal is the agent's own): every question would
/// stay at the agent's terminal.
#[test]
fn hook_install_says_when_no_answerer_would_be_asked() {
    let home = tempfile::tempdir().unwrap();
    let config_home = home.path().join("config");
    let install = || {
        Command::new(env!("CARGO_BIN_EXE_ask-user"))
            .args(["hook", "install", "claude-code", "--settings"])
            .arg(home.path().join("settings.json"))
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", &config_home)
            .env("ASK_USER_STATE_DIR", home.path().join("state"))
            .output()
            .unwrap()
    };
    let said = |output: &Output| String::from_utf8_lossy(&output.stderr).into_owned();
    let bare = install();
    assert!(bare.status.success(), "{}", said(&bare));
    assert!(
        said(&bare).contains("names no answerer the hooks can ask")
            && said(&bare).contains("kind = \"inbox\""),
        "{}",
        said(&bare)
    );
    std::fs::create_dir_all(config_home.join("ask-user")).unwrap();
    std::fs::write(
        config_home.join("ask-user/config.toml"),
        "[[answerer]]\nkind = \"inbox\"\n",
    )
    .unwrap();
    let configured = install();
    assert!(configured.status.success(), "{}", said(&configured));
    assert!(
        !said(&configured).contains("names no answerer"),
        "{}",
        said(&configured)
    );
}
