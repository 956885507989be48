//! Errors of the seam: the codes, the error an ask ends with, and what an
//! answerer may fail with.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The name every coded seam error carries.
pub const USER_QUESTION_ERROR: &str = "UserQuestionError";

/// Why an ask failed. The spelling ([`ErrorCode::as_str`]) is the interface.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `ASK_ABORTED`: the turn was cancelled before or while asking.
    AskAborted,
    /// `ASK_CANCELLED`: the human dismissed the questions.
    AskCancelled,
    /// `ASK_TIMED_OUT`: an opt-in time limit passed without an answer.
    AskTimedOut,
    /// `EMPTY_QUESTIONS`: the request held no questions.
    EmptyQuestions,
    /// `CALLER_NOT_LIVE`: the caller is not the live agent registered under its id.
    CallerNotLive,
    /// `DELEGATED_CALLER`: the caller is a sub-agent owned by a live agent.
    DelegatedCaller,
    /// `BAD_INTENT`: a question's intent does not fit the question.
    BadIntent,
    /// `NO_PROVIDER`: no answerer claimed the request.
    NoProvider,
    /// `INVALID_ANSWER`: an answerer's answers do not fit the questions.
    InvalidAnswer,
    /// Any other code, as an answerer sent it.
    Other(String),
}

impl ErrorCode {
    /// The code as it appears on the wire, e.g. `NO_PROVIDER`.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::AskAborted => "ASK_ABORTED",
            ErrorCode::AskCancelled => "ASK_CANCELLED",
            ErrorCode::AskTimedOut => "ASK_TIMED_OUT",
            ErrorCode::EmptyQuestions => "EMPTY_QUESTIONS",
            ErrorCode::CallerNotLive => "CALLER_NOT_LIVE",
            ErrorCode::DelegatedCaller => "DELEGATED_CALLER",
            ErrorCode::BadIntent => "BAD_INTENT",
            ErrorCode::NoProvider => "NO_PROVIDER",
            ErrorCode::InvalidAnswer => "INVALID_ANSWER",
            ErrorCode::Other(code) => code,
        }
    }

    /// Reads a code as spelled on the wire; unknown codes are kept verbatim.
    pub fn parse(code: &str) -> Self {
        [
            ErrorCode::AskAborted,
            ErrorCode::AskCancelled,
            ErrorCode::AskTimedOut,
            ErrorCode::EmptyQuestions,
            ErrorCode::CallerNotLive,
            ErrorCode::DelegatedCaller,
            ErrorCode::BadIntent,
            ErrorCode::NoProvider,
            ErrorCode::InvalidAnswer,
        ]
        .into_iter()
        .find(|known| known.as_str() == code)
        .unwrap_or_else(|| ErrorCode::Other(code.to_owned()))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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

    /// `ASK_ABORTED`.
    pub(crate) fn aborted() -> Self {
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
