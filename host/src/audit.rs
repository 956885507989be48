//! The audit trail: one JSON line per ask, opt-in.
//!
//! Each line holds the time, the caller, the questions, which answerer
//! claimed, the outcome (the answers, or the error's code, name and message)
//! and the duration. Nothing else is written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::agents::AgentHandle;
use crate::error::AskError;
use crate::question::{Answer, Question};
use crate::sync::lock;

/// An append-only JSON-lines file of asks.
#[derive(Debug)]
pub struct AuditLog {
    file: Mutex<File>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    time: String,
    caller: Option<&'a str>,
    questions: &'a [Question],
    answerer: Option<&'a str>,
    outcome: Outcome<'a>,
    duration_ms: f64,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Outcome<'a> {
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
    /// Opens `path` for appending, creating it (and nothing else) if needed.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog {
            file: Mutex::new(file),
        })
    }

    pub(crate) fn record(
        &self,
        caller: Option<&AgentHandle>,
        questions: &[Question],
        answerer: Option<&str>,
        outcome: &Result<Vec<Answer>, AskError>,
        duration: Duration,
    ) {
        let outcome = match outcome {
            Ok(answers) => Outcome::Answered { answers },
            Err(error) => Outcome::Failed {
                name: error.name(),
                code: error.code().map(|c| c.as_str()),
                message: error.message(),
            },
        };
        let record = Record {
            time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            caller: caller.map(AgentHandle::id),
            questions,
            answerer,
            outcome,
            duration_ms: duration.as_secs_f64() * 1000.0,
        };
        let mut line = serde_json::to_string(&record).expect("records are plain JSON");
        line.push('\n');
        // One write of a whole line, appended: lines from concurrent asks
        // never interleave. A failing disk must not fail the ask.
        let mut file = lock(&self.file);
        if let Err(error) = file.write_all(line.as_bytes()) {
            eprintln!("ask-user: cannot write the audit trail: {error}");
        }
    }
}
