//! A server process a test started: heard from, signalled, and waited for
//! with a bound.

// Each test that includes this file uses part of it.

use std::io::{BufRead, BufReader};
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Sends `child` `signal`.
pub fn signal(child: &Child, signal: libc::c_int) {
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// Waits, at most `wait`, for `output` (fed by a thread reading the
/// child's output) to close, passing over what still comes, then for the
/// child to exit; `None` when it is still running.
pub fn exit<T>(
    child: &mut Child,
    output: &mpsc::Receiver<T>,
    wait: Duration,
) -> Option<ExitStatus> {
    let start = Instant::now();
    while let Some(left) = wait.checked_sub(start.elapsed()) {
        match output.recv_timeout(left) {
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => return None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Some(child.wait().unwrap()),
        }
    }
    None
}

/// Reads the child's standard error (piped) until a line holds `text`, at
/// most `wait`; the rest is drained on a thread, so the child never blocks
/// on a full pipe. The error holds all it said when it ended first.
pub fn said_on_stderr(child: &mut Child, text: &str, wait: Duration) -> Result<(), String> {
    line_on_stderr(child, text, wait).map(drop)
}

/// As [`said_on_stderr`], and the line.
pub fn line_on_stderr(child: &mut Child, text: &str, wait: Duration) -> Result<String, String> {
    let stderr = child.stderr.take().expect("standard error is piped");
    let (tx, rx) = mpsc::channel();
    let text = text.to_owned();
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains(&text) {
                let _ = tx.send(Ok(line.clone()));
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let _ = tx.send(Err(seen));
    });
    rx.recv_timeout(wait)
        .map_err(|_| "nothing said in time".to_owned())
        .and_then(|said| said)
}

/// A file a child writes its standard error to, printed (to the test's
/// captured output) if the test panics while it is alive: what a runtime
/// nobody here wrote said, when a test of it fails.
pub struct ShownOnPanic {
    what: &'static str,
    file: tempfile::NamedTempFile,
}

impl ShownOnPanic {
    /// A new, empty file for what `what` says.
    pub fn new(what: &'static str) -> Self {
        let file = tempfile::NamedTempFile::new().expect("a temporary file");
        Self { what, file }
    }

    /// The file, to give a child as its standard error.
    pub fn file(&self) -> std::fs::File {
        self.file.reopen().expect("the temporary file opens again")
    }
}

impl Drop for ShownOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let said = std::fs::read_to_string(self.file.path()).unwrap_or_default();
            eprintln!("--- what {} said ---\n{said}", self.what);
        }
    }
}
