//! What the model is told: the tool's name, description and schemas.

/// The tool's name.
pub const NAME: &str = "ask_user_question";

/// The tool's description, written for the model.
pub const DESCRIPTION: &str = "\
Pause and ask the user one or more questions, then continue with their answers. \
Use it when you need a confirmation before an action with consequences, a choice \
between outcomes only the user can make, or information you cannot find yourself. \
Do not use it for things you can decide or look up on your own.

Ask all related questions in one call; they are shown together and answered as \
one batch. Give each question a short unique id, the complete question, and a \
short header. Offer options when the answer is a choice: 2 to 4 distinct \
options, each with a one-sentence description of its trade-off. If you \
recommend one, put it first and append \" (Recommended)\" to its label. Set \
multi_select when several options may be chosen together. Omit options for a \
free-text question. The user can always type their own answer or skip a \
question.

The result is JSON: {\"answers\":[{\"id\":\"…\",\"selected\":[\"…\"],\"custom\":\"…\"}]}, \
one item per question. `selected` holds the chosen labels exactly as you wrote \
them; `custom` holds the user's own words when they typed any; an empty \
`selected` without `custom` means the user skipped the question.";

/// The JSON Schema (draft 2020-12) of the arguments, as JSON text.
///
/// Generated from [`crate::args::Arguments`] by schemars at build time rather
/// than in the component, which keeps the component small; the test below
/// fails when this text and the types disagree (`UPDATE_SCHEMAS=1` rewrites it).
pub const INPUT_SCHEMA: &str = include_str!("../schema/input.schema.json");

/// The JSON Schema of the structured result, generated from
/// [`crate::output::Output`] in the same way.
pub const OUTPUT_SCHEMA: &str = include_str!("../schema/output.schema.json");

#[cfg(test)]
mod tests {
    use schemars::generate::SchemaSettings;

    use crate::args::Arguments;
    use crate::output::Output;

    fn check(file: &str, committed: &str, generated: schemars::Schema) {
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("schema")
                .join(file);
            std::fs::write(
                path,
                serde_json::to_string_pretty(&generated).unwrap() + "\n",
            )
            .unwrap();
            return;
        }
        // Compared as JSON values: key order depends on serde_json's features,
        // which a workspace build may unify differently.
        let committed: serde_json::Value = serde_json::from_str(committed).unwrap();
        assert_eq!(
            committed,
            generated.to_value(),
            "schema/{file} is out of date with the Rust types; run \
             `UPDATE_SCHEMAS=1 cargo test -p ask-user-tool` and commit the result"
        );
    }

    #[test]
    fn input_schema_is_generated_from_the_argument_types() {
        let generator = SchemaSettings::draft2020_12()
            .for_deserialize()
            .into_generator();
        check(
            "input.schema.json",
            super::INPUT_SCHEMA,
            generator.into_root_schema_for::<Arguments>(),
        );
    }

    #[test]
    fn output_schema_is_generated_from_the_output_types() {
        let generator = SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator();
        check(
            "output.schema.json",
            super::OUTPUT_SCHEMA,
            generator.into_root_schema_for::<Output>(),
        );
    }
}
