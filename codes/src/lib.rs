//! The error codes of `ask_user_question`, spelled once.
//!
//! Every failure that reaches a model carries an error *name* (the family)
//! and usually a *code* (what happened). The codes are the interface: hosts,
//! answerers and models match on them, so they are spelled here and nowhere
//! else. The tool component (`no_std`) and the host both use this crate; each
//! WIT version maps its own `error-code` variant to [`ErrorCode`] in one
//! table of its own.

#![no_std]

extern crate alloc;

pub mod limits;

use alloc::borrow::ToOwned;
use alloc::string::String;
use core::fmt;

/// The error name of every coded seam error.
pub const USER_QUESTION_ERROR: &str = "UserQuestionError";
/// The error name of arguments that do not fit the tool's input schema.
pub const INVALID_ARGUMENTS_ERROR: &str = "InvalidArgumentsError";
/// The error name of answers that do not fit the tool's output schema.
pub const INVALID_TOOL_OUTPUT_ERROR: &str = "InvalidToolOutputError";
/// The error name of results the sandbox produces.
pub const TOOL_SANDBOX_ERROR: &str = "ToolSandboxError";

macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $spelling:literal in $name:ident,)*) => {
        /// Why a tool call or an ask failed. [`as_str`](Self::as_str) is the
        /// wire spelling, e.g. `NO_PROVIDER`.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
            /// Any other code, as an answerer sent it (kept verbatim).
            Other(String),
        }

        impl ErrorCode {
            /// Every code this crate knows, in the order of the docs.
            pub const KNOWN: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code as it appears on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorCode::$variant => $spelling,)*
                    ErrorCode::Other(code) => code,
                }
            }

            /// The error name that goes with a known code; `None` for
            /// [`Other`](Self::Other), whose sender names it.
            pub fn name(&self) -> Option<&'static str> {
                match self {
                    $(ErrorCode::$variant => Some($name),)*
                    ErrorCode::Other(_) => None,
                }
            }

            /// Reads a code as spelled on the wire; unknown codes are kept
            /// verbatim as [`Other`](Self::Other).
            pub fn parse(code: &str) -> Self {
                match code {
                    $($spelling => ErrorCode::$variant,)*
                    other => ErrorCode::Other(other.to_owned()),
                }
            }
        }
    };
}

codes! {
    /// The turn was cancelled before or while asking.
    AskAborted = "ASK_ABORTED" in USER_QUESTION_ERROR,
    /// The human dismissed the questions.
    AskCancelled = "ASK_CANCELLED" in USER_QUESTION_ERROR,
    /// An opt-in time limit passed without an answer.
    AskTimedOut = "ASK_TIMED_OUT" in USER_QUESTION_ERROR,
    /// The request held no questions.
    EmptyQuestions = "EMPTY_QUESTIONS" in USER_QUESTION_ERROR,
    /// The caller is not the live agent registered under its id.
    CallerNotLive = "CALLER_NOT_LIVE" in USER_QUESTION_ERROR,
    /// The caller is a sub-agent owned by a live agent.
    DelegatedCaller = "DELEGATED_CALLER" in USER_QUESTION_ERROR,
    /// A sub-agent asked past its root's budget of relayed asks this turn.
    DelegatedAskLimit = "DELEGATED_ASK_LIMIT" in USER_QUESTION_ERROR,
    /// A question's intent does not fit the question.
    BadIntent = "BAD_INTENT" in USER_QUESTION_ERROR,
    /// No answerer claimed the request.
    NoProvider = "NO_PROVIDER" in USER_QUESTION_ERROR,
    /// An answerer's answers do not fit the questions.
    InvalidAnswer = "INVALID_ANSWER" in USER_QUESTION_ERROR,
    /// The model's arguments do not fit the input schema or a limit.
    InvalidArgs = "INVALID_ARGS" in INVALID_ARGUMENTS_ERROR,
    /// The seam's answers do not fit the output schema.
    InvalidToolOutput = "INVALID_TOOL_OUTPUT" in INVALID_TOOL_OUTPUT_ERROR,
    /// The component ran past its CPU deadline.
    GuestDeadlineExceeded = "GUEST_DEADLINE_EXCEEDED" in TOOL_SANDBOX_ERROR,
    /// The component asked for memory past its cap.
    GuestMemoryExceeded = "GUEST_MEMORY_EXCEEDED" in TOOL_SANDBOX_ERROR,
    /// The component trapped (a panic, an unreachable).
    GuestTrapped = "GUEST_TRAPPED" in TOOL_SANDBOX_ERROR,
    /// The component's result is over the output limit.
    GuestOutputTooLarge = "GUEST_OUTPUT_TOO_LARGE" in TOOL_SANDBOX_ERROR,
    /// The component sent something its WIT contract forbids.
    GuestContractViolation = "GUEST_CONTRACT_VIOLATION" in TOOL_SANDBOX_ERROR,
    /// The component asked more often than one call may.
    GuestTooManyAsks = "GUEST_TOO_MANY_ASKS" in TOOL_SANDBOX_ERROR,
    /// The component's request is over the request limit.
    GuestRequestTooLarge = "GUEST_REQUEST_TOO_LARGE" in TOOL_SANDBOX_ERROR,
    /// Every call slot is in use.
    HostBusy = "HOST_BUSY" in TOOL_SANDBOX_ERROR,
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for ErrorCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = <alloc::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(ErrorCode::parse(&code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_code_reads_back_as_itself() {
        for code in ErrorCode::KNOWN {
            assert_eq!(&ErrorCode::parse(code.as_str()), code);
            assert!(code.name().is_some(), "{code} has no error name");
        }
    }

    #[test]
    fn spellings_are_upper_snake_case_and_unique() {
        for (n, code) in ErrorCode::KNOWN.iter().enumerate() {
            let spelling = code.as_str();
            assert!(
                spelling
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{spelling}"
            );
            assert!(
                ErrorCode::KNOWN[n + 1..]
                    .iter()
                    .all(|other| other.as_str() != spelling),
                "{spelling} is spelled twice"
            );
        }
    }

    #[test]
    fn an_unknown_code_is_kept_verbatim_and_unnamed() {
        let code = ErrorCode::parse("RATE_LIMITED");
        assert_eq!(code, ErrorCode::Other("RATE_LIMITED".into()));
        assert_eq!(code.as_str(), "RATE_LIMITED");
        assert_eq!(code.name(), None);
        // Case matters: the wire spelling is exact.
        assert_eq!(
            ErrorCode::parse("no_provider"),
            ErrorCode::Other("no_provider".into())
        );
    }

    #[test]
    fn families_name_their_codes() {
        assert_eq!(ErrorCode::NoProvider.name(), Some(USER_QUESTION_ERROR));
        assert_eq!(ErrorCode::InvalidArgs.name(), Some(INVALID_ARGUMENTS_ERROR));
        assert_eq!(
            ErrorCode::InvalidToolOutput.name(),
            Some(INVALID_TOOL_OUTPUT_ERROR)
        );
        assert_eq!(ErrorCode::HostBusy.name(), Some(TOOL_SANDBOX_ERROR));
    }
}
