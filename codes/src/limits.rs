//! Every input and output limit of the tool, in one place: the tool
//! component checks its arguments and output against them, and a host
//! sizes what it takes from an answerer (a page's answer, a form's) by them.
//!
//! Each is generous for any honest call and exists so that a confused or
//! hostile model cannot make the tool (or the human) handle unbounded input.
//! The argument limits appear in the input schema (`maxItems`, `maxLength`)
//! and a call that exceeds one fails with `INVALID_ARGS` naming the limit.
//! String lengths count Unicode scalar values, as JSON Schema does.

/// Size of the arguments JSON text, in bytes.
pub const MAX_ARGUMENTS_BYTES: usize = 256 * 1024;
/// Questions in one call.
pub const MAX_QUESTIONS: usize = 16;
/// Options on one question.
pub const MAX_OPTIONS: usize = 32;
/// Length of a question id.
pub const MAX_ID_CHARS: usize = 128;
/// Length of a question's text.
pub const MAX_QUESTION_CHARS: usize = 4_000;
/// Length of a question's header.
pub const MAX_HEADER_CHARS: usize = 64;
/// Length of an option's label.
pub const MAX_LABEL_CHARS: usize = 200;
/// Length of an option's description.
pub const MAX_DESCRIPTION_CHARS: usize = 1_000;
/// Size of the extra keys on one option, as compact JSON, in bytes.
pub const MAX_OPTION_EXTRA_BYTES: usize = 4 * 1024;
/// Length of one answer's free text (output).
pub const MAX_CUSTOM_CHARS: usize = 16_000;

/// The largest request a component may put to the human in one ask, by
/// default, in bytes: its text plus a little per question and option (a host
/// may set another limit; what goes past it reaches no answerer). A service
/// that takes requests from hosts (an inbox) sizes its bodies by it.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;

/// The longest JSON escape of one character (`\u001f`), in bytes.
const MAX_ESCAPE_BYTES: usize = 6;

/// The largest answer set that fits the limits, as JSON text, in bytes:
/// every question answered with its id, every label of its options and the
/// longest own words, every character at its longest escape, and the
/// punctuation of each answer. A body that carries answers is sized by it.
pub const MAX_ANSWERS_JSON_BYTES: usize = MAX_QUESTIONS
    * (64
        + MAX_ESCAPE_BYTES * (MAX_ID_CHARS + MAX_CUSTOM_CHARS)
        + MAX_OPTIONS * (3 + MAX_ESCAPE_BYTES * MAX_LABEL_CHARS));
