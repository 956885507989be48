//! The seam as the tool sees it: plain Rust mirrors of the WIT `types`.
//!
//! The tool logic speaks these types so that it compiles and is tested
//! natively; the component glue converts them to and from the WIT bindings.

use alloc::string::String;
use alloc::vec::Vec;

/// A batch of questions for the human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub questions: Vec<Question>,
}

/// One question, as the seam carries it. The tool never sets `detail` or
/// `intent`: the model cannot send them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub id: String,
    pub question: String,
    pub header: Option<String>,
    pub options: Option<Vec<QuestionOption>>,
    pub multi_select: Option<bool>,
}

/// One choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    pub label: String,
    pub description: Option<String>,
    /// Extra keys the model sent, as the text of one JSON object.
    pub extra_json: Option<String>,
}

/// The human's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub id: String,
    pub selected: Vec<String>,
    pub custom: Option<String>,
}

/// A failed ask, as the seam reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskError {
    pub name: String,
    /// Absent for an uncoded failure.
    pub code: Option<crate::ErrorCode>,
    pub message: String,
}
