//! A tool component that asks the human from `definition()`, which a host
//! calls while loading it: no ask may reach anyone then.
#![cfg(target_arch = "wasm32")]

wit_bindgen::generate!({
    world: "ask-user-tool",
    path: "../../../wit/v0.1.0",
});

use dsh::ask_user::types::{Question, Request};
use exports::dsh::ask_user::tool::{Guest, ToolDefinition, ToolFailure, ToolOutput};

struct AsksOnLoad;

export!(AsksOnLoad);

impl Guest for AsksOnLoad {
    fn definition() -> ToolDefinition {
        let _ = dsh::ask_user::user_questions::ask(&Request {
            questions: vec![Question {
                id: "q".into(),
                question: "Shall I be loaded?".into(),
                detail: None,
                header: None,
                options: None,
                multi_select: None,
                intent: None,
            }],
        });
        ToolDefinition {
            name: "asks_on_load".into(),
            description: "Asks while it is loaded.".into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: r#"{"type":"object"}"#.into(),
        }
    }

    fn execute(_: String) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput {
            answers: Vec::new(),
            text: String::new(),
        })
    }
}
