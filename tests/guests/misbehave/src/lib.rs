//! A tool component that misbehaves on purpose. `execute` takes the name of
//! a misbehaviour as its arguments; the host must survive every one.
#![cfg(target_arch = "wasm32")]

wit_bindgen::generate!({
    world: "ask-user-tool",
    path: "../../../wit",
});

use dsh::ask_user::types::{Question, QuestionOption, Request};
use exports::dsh::ask_user::tool::{Guest, ToolDefinition, ToolFailure, ToolOutput};

struct Misbehave;

export!(Misbehave);

impl Guest for Misbehave {
    fn definition() -> ToolDefinition {
        ToolDefinition {
            name: "misbehave".into(),
            description: "Misbehaves on purpose.".into(),
            input_schema: r#"{"type":"string"}"#.into(),
            output_schema: r#"{"type":"object"}"#.into(),
        }
    }

    fn execute(arguments: String) -> Result<ToolOutput, ToolFailure> {
        match arguments.as_str() {
            // Spins forever without calling the host.
            "loop" => loop {
                std::hint::black_box(());
            },
            // Allocates until something gives.
            "grow" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "trap" => panic!("misbehave: trapping on purpose"),
            // Returns far more text than any honest answer.
            "big-output" => Ok(ToolOutput {
                answers: Vec::new(),
                text: "x".repeat(4 << 20),
            }),
            // Breaks the contract: extra-json must be a JSON object.
            "bad-extra-json" => {
                let _ = dsh::ask_user::user_questions::ask(&Request {
                    questions: vec![Question {
                        id: "q".into(),
                        question: "?".into(),
                        detail: None,
                        header: None,
                        options: Some(vec![QuestionOption {
                            label: "a".into(),
                            description: None,
                            extra_json: Some("[not an object".into()),
                        }]),
                        multi_select: None,
                        intent: None,
                    }],
                });
                unreachable!("the host must not answer a request that breaks the contract")
            }
            // Asks (the host's answerer takes its time), then returns.
            "ask" => {
                let answered = dsh::ask_user::user_questions::ask(&Request {
                    questions: vec![Question {
                        id: "q".into(),
                        question: "Waiting is not CPU time?".into(),
                        detail: None,
                        header: None,
                        options: None,
                        multi_select: None,
                        intent: None,
                    }],
                });
                Ok(ToolOutput {
                    answers: answered.unwrap_or_default(),
                    text: "asked".into(),
                })
            }
            // Reports what of the outside world it can see.
            "wasi" => Ok(ToolOutput {
                answers: Vec::new(),
                text: format!(
                    "env={} args={} root={} tmp={}",
                    std::env::vars().count(),
                    std::env::args().count(),
                    std::fs::read_dir("/").is_ok(),
                    std::fs::write("/tmp/misbehave", b"x").is_ok(),
                ),
            }),
            other => Err(ToolFailure {
                name: "Misbehave".into(),
                code: None,
                message: format!("unknown misbehaviour {other:?}"),
            }),
        }
    }
}
