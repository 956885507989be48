//! The tool definition the component states, and its schemas as JSON Schema.

use ask_user_tests::Harness;
use serde_json::{Value, json};

/// The SPEC's examples of honest arguments.
fn spec_examples() -> Vec<Value> {
    vec![
        json!({"questions":[{"id":"pkg","question":"Which package manager?","header":"Choose",
            "options":[{"label":"pnpm (Recommended)","description":"Fast, strict."},{"label":"npm"}]}]}),
        json!({"questions":[{"id":"features","question":"Which features?","multi_select":true,
            "options":[{"label":"auth"},{"label":"billing","icon":"card"}]},
            {"id":"name","question":"What should the project be called?"}]}),
        json!({"questions":[{"id":"ok","question":"Deploy now?","header":"Confirm",
            "options":[{"label":"Yes"},{"label":"No"}],"priority":"high"}]}),
    ]
}

#[tokio::test]
async fn names_the_tool_and_describes_it_for_the_model() {
    let h = Harness::new().await;
    let d = h.runtime.definition();
    assert_eq!(d.name, "ask_user_question");
    assert!(d.description.contains("(Recommended)"), "{}", d.description);
    assert!(d.description.contains("multi_select"), "{}", d.description);
    let printed = serde_json::to_value(d).unwrap();
    let keys: Vec<&str> = printed
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["name", "description", "inputSchema", "outputSchema"]);
}

#[tokio::test]
async fn input_schema_has_the_spec_fields_and_nothing_the_model_may_not_send() {
    let h = Harness::new().await;
    let schema = &h.runtime.definition().input_schema;
    assert_eq!(schema["required"], json!(["questions"]));
    let question = &schema["$defs"]["Question"];
    assert_eq!(question["required"], json!(["id", "question"]));
    let mut fields: Vec<&String> = question["properties"].as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(
        fields,
        ["header", "id", "multi_select", "options", "question"]
    );
    let option = &schema["$defs"]["QuestionOption"];
    assert_eq!(option["required"], json!(["label"]));
    let mut fields: Vec<&String> = option["properties"].as_object().unwrap().keys().collect();
    fields.sort();
    assert_eq!(fields, ["description", "label"]);
    let text = schema.to_string();
    for forbidden in [
        "\"detail\"",
        "\"intent\"",
        "\"value\"",
        "\"recommended\"",
        "\"preview\"",
    ] {
        assert!(!text.contains(forbidden), "the schema offers {forbidden}");
    }
}

#[tokio::test]
async fn both_schemas_are_valid_json_schema() {
    let h = Harness::new().await;
    let d = h.runtime.definition();
    for schema in [&d.input_schema, &d.output_schema] {
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        jsonschema::meta::validate(schema).expect("a valid JSON Schema");
    }
}

#[tokio::test]
async fn input_schema_accepts_the_spec_examples_and_the_tool_runs_them() {
    let h = Harness::new().await;
    h.answerer(ask_user_tests::Behaviour::ClaimFirst);
    let validator = jsonschema::validator_for(&h.runtime.definition().input_schema).unwrap();
    for example in spec_examples() {
        assert!(validator.is_valid(&example), "schema rejects {example}");
        let result = h.call(example.clone()).await;
        assert!(!result.is_error, "{example} gave {result:?}");
    }
}

#[tokio::test]
async fn output_schema_accepts_what_the_tool_returns() {
    let h = Harness::new().await;
    h.answerer(ask_user_tests::Behaviour::ClaimFirst);
    let validator = jsonschema::validator_for(&h.runtime.definition().output_schema).unwrap();
    for example in spec_examples() {
        let result = h.call(example).await;
        let structured = result.structured_content.clone().unwrap();
        assert!(validator.is_valid(&structured), "{structured}");
        let text: Value = serde_json::from_str(result.text()).unwrap();
        assert!(validator.is_valid(&text), "{text}");
    }
    assert!(!validator.is_valid(&json!({"answers":[{"id":"q","selected":[],"extra":1}]})));
}

/// The component checks arguments against the same schema it publishes:
/// what the schema rejects is INVALID_ARGS, what it accepts is not.
#[tokio::test]
async fn the_component_and_the_schema_agree_on_every_case() {
    let h = Harness::new().await;
    h.answerer(ask_user_tests::Behaviour::ClaimFirst);
    let validator = jsonschema::validator_for(&h.runtime.definition().input_schema).unwrap();
    let long = |n: usize| "x".repeat(n);
    let q = |extra: Value| {
        let mut q = json!({"id":"q","question":"?"});
        q.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"questions":[q]})
    };
    let cases = [
        json!([]),
        json!({}),
        json!({"questions":{}}),
        json!({"questions":[{"id":"q"}]}),
        json!({"questions":[{"id":7,"question":"?"}]}),
        json!({"questions":[{"id":"","question":"?"}]}),
        q(json!({"header":null})),
        q(json!({"header":""})),
        q(json!({"header":long(64)})),
        q(json!({"header":long(65)})),
        q(json!({"multi_select":"yes"})),
        q(json!({"multi_select":null})),
        q(json!({"options":[]})),
        q(json!({"options":[{}]})),
        q(json!({"options":[{"label":""}]})),
        q(json!({"options":[{"label":"a","description":null}]})),
        q(json!({"options":[{"label":"a","description":5}]})),
        q(json!({"options":[{"label":long(200)}]})),
        q(json!({"options":[{"label":long(201)}]})),
        q(json!({"id":long(128)})),
        q(json!({"id":long(129)})),
        q(json!({"question":long(4000)})),
        q(json!({"question":long(4001)})),
        q(json!({"options":(0..32).map(|i| json!({"label":i.to_string()})).collect::<Vec<_>>()})),
        q(json!({"options":(0..33).map(|i| json!({"label":i.to_string()})).collect::<Vec<_>>()})),
        json!({"questions":(0..16).map(|i| json!({"id":i.to_string(),"question":"?"})).collect::<Vec<_>>()}),
        json!({"questions":(0..17).map(|i| json!({"id":i.to_string(),"question":"?"})).collect::<Vec<_>>()}),
    ];
    for case in cases {
        let schema_accepts = validator.is_valid(&case);
        let result = h.call(case.clone()).await;
        let invalid_args = result.code() == Some("INVALID_ARGS");
        assert_eq!(
            schema_accepts,
            !invalid_args,
            "schema accepts: {schema_accepts}, tool says {:?} for {case}",
            result.text()
        );
    }
}
