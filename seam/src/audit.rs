//! The audit trail: one JSON line per ask, opt-in.
//!
//! Each line holds the time, the caller (and a relayed sub-agent's chain,
//! `askedBy`), the questions, which answerer
//! claimed, the outcome (the answers, or the error's code, name and message)
//! and the duration. Nothing else is written.
//!
//! Lines are written by a thread of the log's own, so an ask never waits on
//! the disk: [`AuditLog::flush`] waits until every line recorded so far is
//! written. A line that cannot be written is reported as a `tracing` warning
//! and never fails the ask.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio::sync::oneshot;

use crate::agents::AgentHandle;
use crate::error::AskError;
use crate::question::{Answer, Question};

/// An append-only JSON-lines file of asks.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    /// To the writer thread; sending never waits on the disk.
    lines: mpsc::Sender<Job>,
}

/// What the writer thread is told.
#[derive(Debug)]
enum Job {
    Line(String),
    /// Tell this sender once every earlier line is written.
    Flush(oneshot::Sender<()>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    time: String,
    caller: Option<&'a str>,
    /// A relayed sub-agent's chain, root first.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    asked_by: &'a [String],
    questions: &'a [Question],
    answerer: Option<&'a str>,
    outcome: Ended<'a>,
    duration_ms: f64,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Ended<'a> {
    Answered {
        answers: &'a [Answer],
    },
    Failed {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'a str>,
        message: &'a str,
    },
}

impl AuditLog {
    /// Opens `path` for appending, creating it (and nothing else) if needed,
    /// readable by this user only (mode 0600: it holds the questions and the
    /// answers), and starts its writer thread.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        let (lines, received) = mpsc::channel();
        let shown = path.to_owned();
        std::thread::Builder::new()
            .name("ask-user-audit".to_owned())
            .spawn(move || write_lines(file, &shown, received))?;
        Ok(AuditLog {
            path: path.to_owned(),
            lines,
        })
    }

    /// Waits until every line recorded so far is written.
    pub async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.lines.send(Job::Flush(done)).is_ok() {
            let _ = written.await;
        }
    }

    pub(crate) fn record(
        &self,
        caller: Option<&AgentHandle>,
        asked_by: &[String],
        questions: &[Question],
        answerer: Option<&str>,
        outcome: &Result<Vec<Answer>, AskError>,
        duration: Duration,
    ) {
        let outcome = match outcome {
            Ok(answers) => Ended::Answered { answers },
            Err(error) => Ended::Failed {
                name: error.name(),
                code: error.code().map(|c| c.as_str()),
                message: error.message(),
            },
        };
        let record = Record {
            time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            caller: caller.map(AgentHandle::id),
            asked_by,
            questions,
            answerer,
            outcome,
            duration_ms: duration.as_secs_f64() * 1000.0,
        };
        let mut line = serde_json::to_string(&record).expect("records are plain JSON");
        line.push('\n');
        if self.lines.send(Job::Line(line)).is_err() {
            tracing::warn!(path = %self.path.display(), "the audit trail's writer has stopped; an ask was not recorded");
        }
    }
}

/// The writer thread: one write of a whole line each, appended, so lines
/// from concurrent asks never interleave. Ends when the log is dropped,
/// after writing what it was sent.
fn write_lines(mut file: File, path: &Path, received: mpsc::Receiver<Job>) {
    for job in received {
        match job {
            Job::Line(line) => {
                if let Err(error) = file.write_all(line.as_bytes()) {
                    tracing::warn!(path = %path.display(), %error, "cannot write the audit trail");
                }
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}
