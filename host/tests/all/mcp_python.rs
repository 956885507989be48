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
    run_against(env!("CARGO_BIN_EXE_ask-user"), "", mode, user)
}

/// Runs the Python client against `server`: the command, or an HTTP
/// endpoint with its `token`.
fn run_against(server: &str, token: &str, mode: &str, user: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(python())
        .arg(dir.join("tests/mcp_client.py"))
        .arg(server)
        .env("ASK_USER_MCP_TOKEN", token)
        .arg(mode)
        .arg(user)
        .arg(dir.join("../examples/deploy.json"))
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
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
    let content = json!({"q01_target": "Production", "q02_checks": ["Unit tests"], "q03_note": "From Python"});
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
            form["requestedSchema"]["properties"]["q02_checks"]["type"], "array",
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

/// `ask-user mcp --http` on a free loopback port, stopped when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
    token: String,
}

impl HttpServer {
    fn start() -> Self {
        Self::started(true)
    }

    /// `drain`: keep reading its standard error; else close it after the
    /// first line, as a host that stops listening would.
    fn started(drain: bool) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ask-user"))
            .args(["mcp", "--http", "127.0.0.1:0", "--config", "/dev/null"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ask-user runs");
        // It says where it listens, and with which token, on its first line;
        // the rest of its standard error is drained, so it never writes to
        // a closed pipe.
        let stderr = child.stderr.take().unwrap();
        let (lines, said) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok)
            {
                if lines.send(line).is_err() || !drain {
                    return;
                }
            }
        });
        let said = said
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("ask-user mcp --http says where it listens");
        let url = said
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {said:?}"))
            .to_owned();
        let token = said
            .split("Bearer ")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no token in {said:?}"))
            .to_owned();
        HttpServer { child, url, token }
    }

    /// The status line of a bare POST to the endpoint with these headers.
    fn status(&self, headers: &[&str]) -> String {
        use std::io::{Read, Write};
        let authority = self
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp");
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            body.len()
        );
        if !headers.iter().any(|h| h.starts_with("Host:")) {
            request.push_str(&format!("Host: {authority}\r\n"));
        }
        for header in headers {
            request.push_str(&format!("{header}\r\n"));
        }
        request.push_str(&format!("\r\n{body}"));
        let mut stream = std::net::TcpStream::connect(authority).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        // Read what came, even when the server then resets the connection.
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        let response = String::from_utf8_lossy(&response);
        response.lines().next().unwrap_or_default().to_owned()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_python_sdk_answers_over_streamable_http_with_the_token() {
    let server = HttpServer::start();
    let content =
        json!({"q01_target": "Staging (Recommended)", "q02_checks": [], "q03_note": "Over HTTP"});
    for mode in ["legacy", "2026-07-28"] {
        let ran = run_against(&server.url, &server.token, mode, &content.to_string());
        let result = &ran["result"];
        assert_eq!(result["isError"], false, "{mode}: {result}");
        assert_eq!(
            result["structuredContent"]["answers"][2],
            json!({"id": "note", "selected": [], "custom": "Over HTTP"}),
            "{mode}"
        );
    }
}

#[test]
fn streamable_http_refuses_no_token_a_foreign_origin_and_a_foreign_host() {
    let server = HttpServer::start();
    let bearer = format!("Authorization: Bearer {}", server.token);
    assert!(server.status(&[]).contains(" 401 "), "no token");
    assert!(
        server
            .status(&["Authorization: Bearer 00000000000000000000000000000000"])
            .contains(" 401 "),
        "a wrong token"
    );
    let status = server.status(&[&bearer, "Origin: http://evil.example"]);
    assert!(status.contains(" 403 "), "a foreign Origin: {status}");
    assert!(
        server
            .status(&[&bearer, "Host: evil.example"])
            .contains(" 403 "),
        "a foreign Host (DNS rebinding)"
    );
    // With the token, on its own address, the request reaches MCP (which
    // may still find a bare ping without a session wanting).
    let status = server.status(&[&bearer]);
    assert!(status.starts_with("HTTP/1.1 "), "{status}");
    assert!(
        !status.contains(" 401 ") && !status.contains(" 403 "),
        "the token alone: {status}"
    );
}

#[test]
fn a_closed_standard_error_breaks_no_request() {
    // A refused request is logged; with nobody reading standard error the
    // line is dropped, and the answer still goes out.
    let server = HttpServer::started(false);
    let bearer = format!("Authorization: Bearer {}", server.token);
    for _ in 0..3 {
        let status = server.status(&[&bearer, "Origin: http://evil.example"]);
        assert!(status.contains(" 403 "), "{status}");
    }
}
