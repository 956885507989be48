//! `ask-user mcp --http` on a free port, for tests that speak HTTP to it.

pub use crate::child;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The longest the server may take to say where it listens.
const START: Duration = Duration::from_secs(60);

/// `ask-user mcp --http` on a free port, stopped when dropped.
pub struct Server {
    child: Child,
    /// Its standard error, line by line, after where it listens; closed when it exits.
    stderr: mpsc::Receiver<String>,
    /// Where it listens.
    pub address: SocketAddr,
    /// The bearer token it wants.
    pub token: String,
    /// What it said when it started listening.
    pub announced: String,
}

impl Server {
    /// Starts the server with `args` after `mcp --http 127.0.0.1:0`.
    pub fn start(args: &[&str]) -> Server {
        Server::start_with(args, &[])
    }

    /// As [`start`](Self::start), with `env` set too.
    pub fn start_with(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Server {
        let mut child = Command::new(crate::program())
            .args(["mcp", "--http", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .env("XDG_CACHE_HOME", crate::target_tmp())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // Answerers may say things first.
        let start = std::time::Instant::now();
        let line = loop {
            let left = START.saturating_sub(start.elapsed());
            let line = lines
                .recv_timeout(left)
                .expect("the server says where it listens");
            if line.contains("MCP (Streamable HTTP) at") {
                break line;
            }
        };
        // "MCP (Streamable HTTP) at http://127.0.0.1:P/mcp with the header
        // "Authorization: Bearer T"; …"
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|address| address.parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        let token = line
            .split("Bearer ")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no token in {line:?}"))
            .to_owned();
        // A token given in the environment is named, not shown.
        let token = match token.strip_prefix('$') {
            Some(variable) => env
                .iter()
                .find(|(name, _)| *name == variable)
                .and_then(|(_, value)| value.to_str())
                .unwrap_or_else(|| panic!("the server names {variable}, not given"))
                .to_owned(),
            None => token,
        };
        Server {
            child,
            stderr: lines,
            address,
            token,
            announced: line,
        }
    }
}

impl Server {
    /// `kill -9` of the server, once it has exited.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Sends the server `signal`.
    pub fn signal(&self, signal: libc::c_int) {
        child::signal(&self.child, signal);
    }

    /// Its exit status, once it exits within `wait` (its standard error
    /// closes; what it still says there is passed over).
    pub fn exit(&mut self, wait: Duration) -> Option<ExitStatus> {
        child::exit(&mut self.child, &self.stderr, wait)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
