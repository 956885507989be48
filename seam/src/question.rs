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
    /// What answer it takes, where that is narrower than any: set by
    /// host-side askers only (a field of another MCP server's form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepts: Option<Accepts>,
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
            accepts: None,
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

    /// What own words it takes: any, unless its asker narrowed them.
    pub fn own_words(&self) -> &OwnWords {
        const ANY: &OwnWords = &OwnWords::Any;
        self.accepts.as_ref().map_or(ANY, |a| &a.own_words)
    }

    /// Whether it must be answered: it cannot be skipped.
    pub fn is_required(&self) -> bool {
        self.accepts.as_ref().is_some_and(|a| a.required)
    }

    /// Whether own words go beside a single choice, as a note ([`Accepts::note`]).
    pub fn takes_a_note(&self) -> bool {
        self.accepts.as_ref().is_some_and(|a| a.note)
    }

    /// What in `answer` this question does not take, by the rules its
    /// asker set ([`Accepts`]): "it must be answered", "it takes a whole
    /// number, not \"three\"".
    pub fn refuses(&self, answer: &Answer) -> Option<String> {
        if let Some(custom) = &answer.custom
            && let Err(problem) = self.own_words().value(custom)
        {
            return Some(problem);
        }
        (self.is_required() && answer.selected.is_empty() && answer.custom.is_none())
            .then(|| "it must be answered".to_owned())
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

/// What answer a question takes, where that is narrower than any (a
/// choice, own words, or nothing): the rules of a field of another MCP
/// server's form, which refuses what breaks them. Answerers show only
/// what fits; the seam's answer checks refuse the rest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Accepts {
    /// It cannot be skipped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// What own words it takes.
    #[serde(default)]
    pub own_words: OwnWords,
    /// Own words go beside a single choice, as a note, not in its place
    /// (Codex's questions take a choice and a note).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub note: bool,
}

/// What own words a question takes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum OwnWords {
    /// Any text (within the seam's limit).
    #[default]
    Any,
    /// None: only its options.
    None,
    /// Text of a length within bounds, in characters.
    #[serde(rename_all = "camelCase")]
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_length: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_length: Option<u64>,
    },
    /// A number (a whole one when `integer`) within bounds.
    Number {
        integer: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<f64>,
    },
}

impl OwnWords {
    /// Whether own words may be given at all.
    pub fn allowed(&self) -> bool {
        *self != OwnWords::None
    }

    /// `text` as the value it stands for: itself, or the number it spells
    /// (blanks around it ignored); an error saying what it must be.
    pub fn value(&self, text: &str) -> Result<Value, String> {
        match self {
            OwnWords::Any => Ok(Value::from(text)),
            OwnWords::None => Err("it takes only its options, not own words".to_owned()),
            OwnWords::Text {
                min_length,
                max_length,
            } => {
                let length = text.chars().count() as u64;
                match (min_length, max_length) {
                    (Some(min), _) if length < *min => {
                        Err(format!("it takes at least {min} characters, not {length}"))
                    }
                    (_, Some(max)) if length > *max => {
                        Err(format!("it takes at most {max} characters, not {length}"))
                    }
                    _ => Ok(Value::from(text)),
                }
            }
            OwnWords::Number {
                integer,
                minimum,
                maximum,
            } => {
                let text = text.trim();
                let (number, what) = match integer {
                    true => (
                        text.parse::<i64>().ok().map(|n| (n as f64, Value::from(n))),
                        "a whole number",
                    ),
                    false => (
                        text.parse::<f64>()
                            .ok()
                            .filter(|n| n.is_finite())
                            .map(|n| (n, Value::from(n))),
                        "a number",
                    ),
                };
                let Some((n, value)) = number else {
                    return Err(format!("it takes {what}, not {text:?}"));
                };
                match (minimum, maximum) {
                    (Some(min), _) if n < *min => Err(format!("it takes {what} of at least {min}")),
                    (_, Some(max)) if n > *max => Err(format!("it takes {what} of at most {max}")),
                    _ => Ok(value),
                }
            }
        }
    }
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
