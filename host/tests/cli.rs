//! The `ask-user` command, run as a user runs it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn ask_user(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args(args)
        .current_dir(examples())
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
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
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
        "--timeout",
    );
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
