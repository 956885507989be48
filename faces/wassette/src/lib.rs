//! The wassette face: a component that imports the tool
//! (`dsh:ask-user/tool@0.1.0`) and exports it as one typed world-level
//! function, `ask-user-question`, which wassette lists as one tool whose
//! input schema is the questions' (wassette derives a tool from each
//! exported function, its schema from the function's WIT types, and its
//! description from the component's `package-docs`, which `ask-user
//! component --world wassette` writes from the tool's own definition).
//!
//! What wassette's derivation makes of it, and why the shapes are these:
//! every record field is `required`, an `option<T>` is `T` or `null`, and
//! names are WIT's kebab-case (`multi-select`): WIT has no optional field
//! and no `_` in a name. The description the model reads names the fields
//! as the schema does. An option's keys beyond `label` and `description`
//! cannot be sent this way.

use serde_json::{Map, Value, json};

wit_bindgen::generate!({
    inline: "
        package ask-user:wassette@0.1.0;

        world face {
            import dsh:ask-user/tool@0.1.0;

            record question-option {
                label: string,
                description: option<string>,
            }

            record question {
                id: string,
                question: string,
                header: option<string>,
                options: option<list<question-option>>,
                multi-select: option<bool>,
            }

            record answer {
                id: string,
                selected: list<string>,
                custom: option<string>,
            }

            record failure {
                name: string,
                code: option<string>,
                message: string,
            }

            export ask-user-question: func(questions: list<question>) -> result<list<answer>, failure>;
        }
    ",
    path: "../../wit/v0.1.0",
    world: "ask-user:wassette/face",
    generate_all,
});

use dsh::ask_user::tool;

struct Face;

impl Guest for Face {
    fn ask_user_question(questions: Vec<Question>) -> Result<Vec<Answer>, Failure> {
        let arguments = json!({ "questions": questions.iter().map(to_json).collect::<Vec<_>>() });
        match tool::execute(&arguments.to_string()) {
            Ok(output) => Ok(output
                .answers
                .into_iter()
                .map(|a| Answer {
                    id: a.id,
                    selected: a.selected,
                    custom: a.custom,
                })
                .collect()),
            Err(failure) => Err(Failure {
                name: failure.name,
                code: failure.code,
                message: failure.message,
            }),
        }
    }
}

/// A question as the tool's arguments carry it: what is absent is left out.
fn to_json(q: &Question) -> Value {
    let mut question = Map::new();
    question.insert("id".into(), q.id.clone().into());
    question.insert("question".into(), q.question.clone().into());
    if let Some(header) = &q.header {
        question.insert("header".into(), header.clone().into());
    }
    if let Some(options) = &q.options {
        let options = options.iter().map(|o| {
            let mut option = Map::new();
            option.insert("label".into(), o.label.clone().into());
            if let Some(description) = &o.description {
                option.insert("description".into(), description.clone().into());
            }
            Value::Object(option)
        });
        question.insert("options".into(), Value::Array(options.collect()));
    }
    if let Some(multi) = q.multi_select {
        question.insert("multi_select".into(), multi.into());
    }
    Value::Object(question)
}

export!(Face);
