//! `ask-user mcp` on stdio driven by a raw JSON-RPC peer: each line it
//! writes is read on a thread, and the test sends what it likes, however
//! malformed or large.

pub use crate::child;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest the handshake may take.
const HANDSHAKE: Duration = Duration::from_secs(60);

pub struct McpPeer {
    child: Child,
    messages: mpsc::Receiver<Value>,
    /// Where the server's standard error goes.
    stderr: tempfile::NamedTempFile,
}

impl McpPeer {
    /// Starts `command` (an `ask-user mcp …`) and shakes hands as a client
    /// of protocol 2025-06-18 with `capabilities`.
    pub fn start(command: Command, capabilities: Value) -> McpPeer {
        McpPeer::start_as(command, capabilities, "raw", "2025-06-18")
    }

    /// As [`start`](Self::start), as the client `name` of `protocol`.
    pub fn start_as(
        mut command: Command,
        capabilities: Value,
        name: &str,
        protocol: &str,
    ) -> McpPeer {
        let stderr = tempfile::NamedTempFile::new_in(crate::target_tmp()).unwrap();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && tx.send(value).is_err()
                {
                    break;
                }
            }
        });
        let mut peer = McpPeer {
            child,
            messages,
            stderr,
        };
        peer.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": protocol, "capabilities": capabilities,
            "clientInfo": {"name": name, "version": "0"}}}),
        );
        peer.next(HANDSHAKE, |m| m["id"] == 0)
            .expect("the server answers the handshake");
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        peer
    }

    /// Writes `message` as one line.
    pub fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// Writes `line` and a newline.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Calls the tool with `arguments` as request `id`.
    pub fn call(&mut self, id: u64, arguments: &Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "ask_user_question", "arguments": arguments}}));
    }

    /// The reply to request `id` within `wait`, if any.
    pub fn reply(&self, id: u64, wait: Duration) -> Option<Value> {
        self.next(wait, |m| m["id"] == id && m.get("method").is_none())
    }

    /// The next message for which `wanted` holds, within `wait`; others
    /// are passed over.
    pub fn next(&self, wait: Duration, wanted: impl Fn(&Value) -> bool) -> Option<Value> {
        let start = Instant::now();
        while let Some(left) = wait.checked_sub(start.elapsed()) {
            match self.messages.recv_timeout(left) {
                Ok(message) if wanted(&message) => return Some(message),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    }
}

impl McpPeer {
    /// What the server wrote on standard error so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap()
    }

    /// Sends the server `signal`.
    pub fn signal(&self, signal: libc::c_int) {
        child::signal(&self.child, signal);
    }

    /// Waits, at most `wait`, for the server to close its output (messages
    /// are passed over), then for it to exit, though its input stays open.
    pub fn exit(&mut self, wait: Duration) -> Option<ExitStatus> {
        child::exit(&mut self.child, &self.messages, wait)
    }
}

impl Drop for McpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
