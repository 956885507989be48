//! `ask-user mcp` with an independent client: the official Python MCP SDK
//! (`mcp` on PyPI) launches it over stdio and answers its form.
//!
//! The SDK lives in a virtual environment: `$ASK_USER_TEST_PYTHON` names its
//! interpreter (`.ci/run` makes one), or the test makes one under the
//! target directory on first use (`pip install` from PyPI).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// The SDK's major version this test speaks.
const SDK: &str = "mcp>=2.3,<3";

/// A Python interpreter with the MCP SDK.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        if let Some(python) = std::env::var_os("ASK_USER_TEST_PYTHON") {
            return PathBuf::from(python);
        }
        let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-venv");
        let python = venv.join("bin").join("python");
        let has_sdk = |python: &Path| {
            Command::new(python)
                .args(["-c", "import mcp"])
                .status()
                .is_ok_and(|s| s.success())
        };
        if !has_sdk(&python) {
            let made = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()
                .expect("python3 runs");
            assert!(
                made.success(),
                "python3 -m venv failed (Debian: apt-get install python3-venv)"
            );
            let installed = Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", SDK])
                .status()
                .expect("pip runs");
            assert!(installed.success(), "pip install {SDK} failed");
        }
        python
    })
}

/// Runs the Python client against `ask-user mcp`; returns what it printed.
fn run(mode: &str, user: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(python())
        .arg(dir.join("tests/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_ask-user"))
        .arg(mode)
        .arg(user)
        .arg(dir.join("../examples/deploy.json"))
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .expect("the Python client runs");
    assert!(
        output.status.success(),
        "the Python client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[test]
fn the_python_sdk_answers_the_form_on_both_protocol_versions() {
    let content = json!({"target": "Production", "checks": ["Unit tests"], "note": "From Python"});
    for mode in ["legacy", "2026-07-28"] {
        let ran = run(mode, &content.to_string());
        assert_eq!(ran["tools"], json!(["ask_user_question"]), "{mode}");
        assert_eq!(
            ran["forms"].as_array().unwrap().len(),
            1,
            "{mode}: one form"
        );
        let form = &ran["forms"][0];
        assert_eq!(form["mode"], "form");
        assert_eq!(
            form["requestedSchema"]["properties"]["checks"]["type"], "array",
            "{mode}"
        );
        let result = &ran["result"];
        assert_eq!(result["isError"], false, "{mode}: {result}");
        assert_eq!(
            result["structuredContent"]["answers"],
            json!([
                {"id": "target", "selected": ["Production"]},
                {"id": "checks", "selected": ["Unit tests"]},
                {"id": "note", "selected": [], "custom": "From Python"}
            ]),
            "{mode}"
        );
    }
}

#[test]
fn declining_the_form_in_python_is_ask_cancelled_with_its_code_in_meta() {
    let ran = run("2026-07-28", "decline");
    let result = &ran["result"];
    assert_eq!(result["isError"], true);
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Error [ASK_CANCELLED]"),
        "{result}"
    );
    assert_eq!(result["_meta"]["code"], "ASK_CANCELLED");
}
