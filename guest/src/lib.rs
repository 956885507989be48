//! The `ask_user_question` tool: what the model is told, the checks on its
//! arguments, the mapping to the user-questions seam and back, and the
//! rendering of the answers for the model.
//!
//! This is a plain Rust library. Built for `wasm32-wasip2` it is also the
//! component that exports the WIT `tool` interface (see `component.rs`); that
//! glue only converts types, so everything here is tested natively.

//!
//! In the component the crate is `no_std`: no standard library, no WASI. The
//! component imports nothing but the user-questions seam.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

pub mod args;
pub mod definition;
pub mod json;
pub mod limits;
pub mod output;
pub mod seam;

#[cfg(target_arch = "wasm32")]
mod component;
#[cfg(target_arch = "wasm32")]
mod heap;

use alloc::borrow::ToOwned;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use args::Arguments;
pub use ask_user_codes::ErrorCode;
use output::Output;

/// A failed call, reported to the model as an error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    pub name: String,
    pub code: Option<ErrorCode>,
    pub message: String,
}

impl ToolFailure {
    /// A failure with one of the tool's own codes, under that code's name.
    fn coded(code: ErrorCode, message: String) -> Self {
        ToolFailure {
            name: code.name().unwrap_or_default().to_owned(),
            code: Some(code),
            message,
        }
    }
}

/// Runs the tool: checks `arguments`, asks through `ask`, and returns the
/// checked output with its rendering.
pub fn execute(
    arguments: &str,
    ask: impl FnOnce(seam::Request) -> Result<Vec<seam::Answer>, seam::AskError>,
) -> Result<(Output, String), ToolFailure> {
    let arguments = Arguments::parse(arguments)
        .map_err(|e| ToolFailure::coded(ErrorCode::InvalidArgs, e.to_string()))?;
    let request = arguments.to_request();
    // Checked here as the seam checks it, so that every host, in any
    // language, gets the same answer without asking anyone.
    if request.questions.is_empty() {
        return Err(ToolFailure::coded(
            ErrorCode::EmptyQuestions,
            "the call holds no questions; pass at least one question".to_owned(),
        ));
    }
    let questions = request.questions.clone();
    let answers = ask(request).map_err(|e| ToolFailure {
        name: e.name,
        code: e.code,
        message: e.message,
    })?;
    let output = Output::from_answers(&questions, answers)
        .map_err(|e| ToolFailure::coded(ErrorCode::InvalidAnswer, e.to_string()))?;
    let text = output.render();
    Ok((output, text))
}
