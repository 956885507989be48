//! Errors of the seam: the error an ask ends with, and what an answerer may
//! fail with. The codes themselves are [`ErrorCode`], spelled in one place.

use std::fmt;
use std::sync::Arc;

use ask_user_codes::ErrorCode;
pub use ask_user_codes::{
    INVALID_ARGUMENTS_ERROR, INVALID_TOOL_OUTPUT_ERROR, TOOL_SANDBOX_ERROR, USER_QUESTION_ERROR,
};
use serde::{Deserialize, Serialize};

/// The error an ask ends with.
///
/// A seam error has a [`code`](Self::code) and the name `UserQuestionError`.
/// An answerer's own uncoded failure passes through with its name and no code.
#[derive(Debug, Clone)]
pub struct AskError {
    name: String,
    code: Option<ErrorCode>,
    message: String,
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl AskError {
    /// A seam error with the given code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AskError {
            name: USER_QUESTION_ERROR.to_owned(),
            code: Some(code),
            message: message.into(),
            cause: None,
        }
    }

    /// `ASK_ABORTED`: the turn was cancelled.
    pub fn aborted() -> Self {
        AskError::new(
            ErrorCode::AskAborted,
            "the turn was cancelled, so the question was not asked or was withdrawn; \
             do not ask again in this turn",
        )
    }

    /// Keeps `cause` as this error's source.
    pub fn with_cause(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Arc::new(cause));
        self
    }

    /// `UserQuestionError` for seam errors, else the failure's own name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The seam code; `None` for an uncoded failure passed through.
    pub fn code(&self) -> Option<&ErrorCode> {
        self.code.as_ref()
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AskError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_deref().map(|c| c as _)
    }
}

/// An error as it crosses a transport (a bridge process, a web page):
/// `{"name":…,"message":…,"code":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportedError {
    pub name: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl fmt::Display for TransportedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.code {
            Some(code) => write!(f, "{} [{code}]: {}", self.name, self.message),
            None => write!(f, "{}: {}", self.name, self.message),
        }
    }
}

impl std::error::Error for TransportedError {}

/// How an answerer fails an ask (which ends it).
#[derive(Debug)]
pub enum AnswerError {
    /// A seam error: passes through unchanged.
    Seam(AskError),
    /// An error received over a transport. One named `UserQuestionError` with a
    /// code is rebuilt as that seam error, keeping this as its cause.
    Transported(TransportedError),
    /// Any other failure, named by `name`. After the turn was aborted it
    /// becomes `ASK_ABORTED`; otherwise it passes through uncoded.
    Other {
        name: String,
        error: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl From<AskError> for AnswerError {
    fn from(error: AskError) -> Self {
        AnswerError::Seam(error)
    }
}

impl AnswerError {
    /// Any other failure, named `AnswererError`.
    pub fn other(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        AnswerError::Other {
            name: "AnswererError".to_owned(),
            error: error.into(),
        }
    }

    /// SPEC §2 step 6: the error the ask ends with. `aborted` tells whether
    /// the turn's signal had fired by the time the answerer failed.
    pub(crate) fn into_ask_error(self, aborted: bool) -> AskError {
        match self {
            AnswerError::Seam(error) => error,
            AnswerError::Transported(error) => match (&error.name[..], &error.code) {
                (USER_QUESTION_ERROR, Some(code)) => {
                    AskError::new(ErrorCode::parse(code), error.message.clone()).with_cause(error)
                }
                _ => plain(error.name.clone(), Box::new(error), aborted),
            },
            AnswerError::Other { name, error } => plain(name, error, aborted),
        }
    }
}

fn plain(name: String, error: Box<dyn std::error::Error + Send + Sync>, aborted: bool) -> AskError {
    if aborted {
        return AskError {
            cause: Some(Arc::from(error)),
            ..AskError::aborted()
        };
    }
    AskError {
        name,
        code: None,
        message: error.to_string(),
        cause: Some(Arc::from(error)),
    }
}
