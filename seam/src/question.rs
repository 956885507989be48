//! The seam's request and answer types, as the host and its answerers see them.
//!
//! They serialize in the seam's own spelling (`multiSelect`), which is also the
//! shape of the remote-event frames and of scripted answer files.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A batch of questions, asked together and answered as one batch. The caller
/// and the cancellation are not part of it: the host supplies both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskRequest {
    pub questions: Vec<Question>,
}

/// One question to the human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// Unique within the request; echoed in the answer.
    pub id: String,
    pub question: String,
    /// Longer material the question is about (a plan under review). Set by
    /// host-side askers only; the model cannot send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Absent: a free-text question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<QuestionOption>>,
    /// Absent means the asker did not say; treat as false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
    /// How to present the question. Set by host-side askers only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
}

impl Question {
    /// A free-text question; set the other fields as needed.
    pub fn new(id: impl Into<String>, question: impl Into<String>) -> Self {
        Question {
            id: id.into(),
            question: question.into(),
            detail: None,
            header: None,
            options: None,
            multi_select: None,
            intent: None,
        }
    }

    /// Whether several options may be chosen (absent means no).
    pub fn is_multi_select(&self) -> bool {
        self.multi_select.unwrap_or(false)
    }

    /// The option marked as recommended (its label ends with
    /// ` (Recommended)`, `(推荐)` or `（推荐）`), if any.
    pub fn recommended(&self) -> Option<&QuestionOption> {
        self.options.iter().flatten().find(|o| {
            let label = o.label.trim_end();
            ["(Recommended)", "(推荐)", "（推荐）"]
                .iter()
                .any(|mark| label.ends_with(mark))
        })
    }

    /// The offered labels, in order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.options.iter().flatten().map(|o| o.label.as_str())
    }
}

/// One choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Keys the asker sent beyond `label` and `description`, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl QuestionOption {
    /// An option with just a label.
    pub fn new(label: impl Into<String>) -> Self {
        QuestionOption {
            label: label.into(),
            description: None,
            extra: Map::new(),
        }
    }
}

/// How an answerer should present a question; never changes the protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Intent {
    /// The question reviews the plan in `detail`; choosing `approve` approves it.
    PlanReview { approve: String },
}

/// The human's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub id: String,
    /// Chosen labels: zero or more, at most one for a single-select question.
    #[serde(default)]
    pub selected: Vec<String>,
    /// Free text: replaces the choice (single-select) or adds to it (multi).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

impl Answer {
    /// A skipped question.
    pub fn skipped(id: impl Into<String>) -> Self {
        Answer {
            id: id.into(),
            selected: Vec::new(),
            custom: None,
        }
    }

    /// The answer to question `id` among `answers`, wherever it stands:
    /// answerers may return a batch's answers in any order, so an answer is
    /// always matched by its question's id, never by its place.
    pub fn of<'a>(answers: &'a [Answer], id: &str) -> Option<&'a Answer> {
        answers.iter().find(|answer| answer.id == id)
    }

    /// The chosen labels, then the own words: the answer as an agent that
    /// takes a list of strings for it receives it.
    pub fn parts(&self) -> impl Iterator<Item = &str> {
        self.selected
            .iter()
            .map(String::as_str)
            .chain(self.custom.as_deref())
    }
}
