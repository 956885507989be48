//! The component glue: WIT bindings around the plain library. Conversions,
//! and what a `no_std` component needs: an allocator, a panic handler (a
//! trap, which the host reports), and `cabi_realloc` for the canonical ABI.

use alloc::alloc::{Layout, alloc, realloc};
use alloc::borrow::ToOwned;
use alloc::string::String;

#[global_allocator]
static ALLOCATOR: crate::heap::Heap = crate::heap::Heap::new();

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}

/// The canonical ABI's allocator: the host writes arguments and results of
/// imports through it. With std, wasi-libc would provide it.
///
/// # Safety
/// Called by the host per the component model's canonical ABI only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    if new_len == 0 {
        return align as *mut u8;
    }
    // SAFETY: the canonical ABI passes a power-of-two `align` and, when
    // `old_len` is not zero, a block this allocator gave with that layout.
    let ptr = unsafe {
        if old_len == 0 {
            alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        core::arch::wasm32::unreachable()
    }
    ptr
}

wit_bindgen::generate!({
    world: "ask-user-tool",
    path: "../wit/v0.1.0",
});

use dsh::ask_user::types as wit;
use dsh::ask_user::user_questions;
use exports::dsh::ask_user::tool;

use crate::seam;

struct Component;

export!(Component);

impl tool::Guest for Component {
    fn definition() -> tool::ToolDefinition {
        tool::ToolDefinition {
            name: crate::definition::NAME.to_owned(),
            description: crate::definition::DESCRIPTION.to_owned(),
            input_schema: crate::definition::INPUT_SCHEMA.to_owned(),
            output_schema: crate::definition::OUTPUT_SCHEMA.to_owned(),
        }
    }

    fn execute(arguments: String) -> Result<tool::ToolOutput, tool::ToolFailure> {
        let (output, text) = crate::execute(&arguments, |request| {
            user_questions::ask(&to_wit_request(request))
                .map(|answers| answers.into_iter().map(from_wit_answer).collect())
                .map_err(from_wit_error)
        })
        .map_err(|f| tool::ToolFailure {
            name: f.name,
            code: f.code.map(|code| code.as_str().to_owned()),
            message: f.message,
        })?;
        Ok(tool::ToolOutput {
            answers: output
                .answers
                .into_iter()
                .map(|a| wit::Answer {
                    id: a.id,
                    selected: a.selected,
                    custom: a.custom,
                })
                .collect(),
            text,
        })
    }
}

fn to_wit_request(request: seam::Request) -> wit::Request {
    wit::Request {
        questions: request
            .questions
            .into_iter()
            .map(|q| wit::Question {
                id: q.id,
                question: q.question,
                detail: None,
                header: q.header,
                options: q.options.map(|options| {
                    options
                        .into_iter()
                        .map(|o| wit::QuestionOption {
                            label: o.label,
                            description: o.description,
                            extra_json: o.extra_json,
                        })
                        .collect()
                }),
                multi_select: q.multi_select,
                intent: None,
            })
            .collect(),
    }
}

fn from_wit_answer(answer: wit::Answer) -> seam::Answer {
    seam::Answer {
        id: answer.id,
        selected: answer.selected,
        custom: answer.custom,
    }
}

/// The one table from this WIT version's codes to [`ErrorCode`].
fn from_wit_error(error: wit::AskError) -> seam::AskError {
    use crate::ErrorCode as E;
    use wit::ErrorCode as C;
    let code = error.code.map(|code| match code {
        C::AskAborted => E::AskAborted,
        C::AskCancelled => E::AskCancelled,
        C::AskTimedOut => E::AskTimedOut,
        C::EmptyQuestions => E::EmptyQuestions,
        C::CallerNotLive => E::CallerNotLive,
        C::DelegatedCaller => E::DelegatedCaller,
        C::BadIntent => E::BadIntent,
        C::NoProvider => E::NoProvider,
        C::InvalidAnswer => E::InvalidAnswer,
        C::Other(code) => E::parse(&code),
    });
    seam::AskError {
        name: error.name,
        code,
        message: error.message,
    }
}
