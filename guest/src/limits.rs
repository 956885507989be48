//! Every input and output limit of the tool, in one place.
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
