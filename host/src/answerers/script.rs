//! The scripted answerer: canned answers from a file, for headless runs.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::question::Answer;
use crate::waterfall::{AnswerFuture, Answerer, Ask, Next};

/// Answers from a file in the canonical shape
/// `{"answers":[{"id":…,"selected":[…],"custom":…}]}`.
///
/// It claims a request when it holds an answer for every question id, and
/// passes it on otherwise. It never invents an answer.
#[derive(Debug, Clone)]
pub struct ScriptAnswerer {
    answers: HashMap<String, Answer>,
}

/// A script file that cannot be used.
#[derive(Debug)]
pub struct ScriptError(String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    answers: Vec<Answer>,
}

impl ScriptAnswerer {
    /// Reads answers from JSON text.
    pub fn from_json(json: &str) -> Result<Self, ScriptError> {
        let file: ScriptFile = serde_json::from_str(json).map_err(|e| {
            ScriptError(format!(
                "the answers are not of the shape {{\"answers\":[{{\"id\":…,\"selected\":[…],\"custom\":…}}]}}: {e}"
            ))
        })?;
        let mut answers = HashMap::new();
        for answer in file.answers {
            if let Some(earlier) = answers.insert(answer.id.clone(), answer) {
                return Err(ScriptError(format!(
                    "the answers hold the id {:?} twice",
                    earlier.id
                )));
            }
        }
        Ok(ScriptAnswerer { answers })
    }

    /// The answer held for question `id`, if any.
    pub fn answer_for(&self, id: &str) -> Option<&Answer> {
        self.answers.get(id)
    }

    /// Reads answers from a file.
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let json = std::fs::read_to_string(path)
            .map_err(|e| ScriptError(format!("cannot read {}: {e}", path.display())))?;
        Self::from_json(&json).map_err(|e| ScriptError(format!("{}: {e}", path.display())))
    }
}

impl Answerer for ScriptAnswerer {
    fn name(&self) -> &str {
        "script"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        let answers: Option<Vec<Answer>> = ask
            .request
            .questions
            .iter()
            .map(|q| self.answer_for(&q.id).cloned())
            .collect();
        match answers {
            Some(answers) => Box::pin(std::future::ready(Ok(answers))),
            None => next.run(),
        }
    }
}
