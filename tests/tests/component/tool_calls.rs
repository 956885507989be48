//! A tool call through the real component: the request an answerer sees, the
//! result the model gets, and the argument checks.

use ask_user::{Answer, RuntimeConfig};
use ask_user_tests::{Behaviour, Harness, one_question};
use ask_user_tool::limits::*;
use serde_json::{Value, json};

fn answer(id: &str, selected: &[&str], custom: Option<&str>) -> Answer {
    Answer {
        id: id.into(),
        selected: selected.iter().map(|s| s.to_string()).collect(),
        custom: custom.map(Into::into),
    }
}

#[tokio::test]
async fn the_answerer_sees_the_request_exactly() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let result = h
        .call(json!({"questions":[
            {"id":"mode","question":"Which mode?","header":"Choose mode","multi_select":true,
             "priority":"high","detail":"model cannot send this","intent":{"kind":"plan-review","approve":"Fast (Recommended)"},
             "options":[{"label":"Fast (Recommended)","description":"Fewer checks.","icon":"rocket","weight":{"a":[1,2.5]}},
                        {"label":"Careful"}]},
            {"id":"name","question":"Name?","multi_select":false}
        ]}))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        probe.seen_json(),
        [json!({"questions":[
            {"id":"mode","question":"Which mode?","header":"Choose mode",
             "options":[{"label":"Fast (Recommended)","description":"Fewer checks.","icon":"rocket","weight":{"a":[1,2.5]}},
                        {"label":"Careful"}],
             "multiSelect":true},
            {"id":"name","question":"Name?","multiSelect":false}
        ]})]
    );
}

#[tokio::test]
async fn a_single_choice_renders_as_compact_json() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Claim(vec![answer("q", &["B"], None)]));
    let result = h.call(one_question(&["A", "B"])).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"q","selected":["B"]}]}"#
    );
    assert_eq!(
        result.structured_content,
        Some(json!({"answers":[{"id":"q","selected":["B"]}]}))
    );
    assert!(!result.is_error);
    assert_eq!(result.error, None);
}

#[tokio::test]
async fn multi_select_with_custom_text_renders_in_key_order() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Claim(vec![answer(
        "q",
        &["A", "C"],
        Some("and D"),
    )]));
    let mut args = one_question(&["A", "B", "C"]);
    args["questions"][0]["multi_select"] = json!(true);
    let result = h.call(args).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"q","selected":["A","C"],"custom":"and D"}]}"#
    );
}

#[tokio::test]
async fn a_skipped_question_renders_with_an_empty_selection() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Claim(vec![Answer::skipped("q")]));
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.text(), r#"{"answers":[{"id":"q","selected":[]}]}"#);
}

#[tokio::test]
async fn answers_come_back_in_the_order_the_questions_were_asked() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Claim(vec![
        answer("b", &[], Some("two")),
        answer("a", &[], Some("one")),
    ]));
    let result = h
        .call(json!({"questions":[{"id":"a","question":"1?"},{"id":"b","question":"2?"}]}))
        .await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"a","selected":[],"custom":"one"},{"id":"b","selected":[],"custom":"two"}]}"#
    );
    let text: Value = serde_json::from_str(result.text()).unwrap();
    assert_eq!(result.structured_content, Some(text));
}

#[tokio::test]
async fn nobody_to_answer_is_no_provider_as_an_error_result() {
    let h = Harness::new().await;
    let result = h.call(one_question(&["A"])).await;
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["isError"], true);
    assert_eq!(
        json["error"],
        json!({"name":"UserQuestionError","code":"NO_PROVIDER"})
    );
    assert_eq!(json["content"].as_array().unwrap().len(), 1);
    assert_eq!(json["content"][0]["type"], "text");
    assert!(
        result
            .text()
            .starts_with("Error: no answerer took the question"),
        "{}",
        result.text()
    );
    assert!(json.get("structuredContent").is_none());
}

#[tokio::test]
async fn no_questions_is_empty_questions() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let result = h.call(json!({"questions":[]})).await;
    assert_eq!(result.code(), Some("EMPTY_QUESTIONS"));
    assert_eq!(result.error.as_ref().unwrap().name, "UserQuestionError");
    assert_eq!(probe.calls(), 0);
}

/// Calls with `arguments` (raw text) and returns the INVALID_ARGS message,
/// checking that no answerer was asked.
async fn invalid_args(h: &Harness, arguments: &str) -> String {
    let probe = h.answerer(Behaviour::ClaimFirst);
    let result = h
        .runtime
        .call(&h.root, &Default::default(), arguments)
        .await;
    assert_eq!(
        result.code(),
        Some("INVALID_ARGS"),
        "{arguments}: {result:?}"
    );
    assert_eq!(result.error.as_ref().unwrap().name, "InvalidArgumentsError");
    assert_eq!(probe.calls(), 0, "an answerer was asked for {arguments}");
    result.text().to_owned()
}

#[tokio::test]
async fn malformed_arguments_are_invalid_args() {
    let h = Harness::new().await;
    let message = invalid_args(&h, r#"{"questions":[{"id":"q","#).await;
    assert!(message.contains("cannot be read as JSON"), "{message}");
    // Where, as a person finds it in a file: line and column.
    let message = invalid_args(
        &h,
        "{\"questions\": [\n  {\"id\": \"q\", \"question\": \"é\",}\n]}",
    )
    .await;
    assert!(message.contains("(line 2, column 31)"), "{message}");
    let message = invalid_args(&h, r#"{"questions":[]} trailing"#).await;
    assert!(message.contains("cannot be read as JSON"), "{message}");
    let message = invalid_args(&h, r#"[1,2]"#).await;
    assert!(message.contains("invalid type"), "{message}");
    let message = invalid_args(&h, r#"{}"#).await;
    assert!(message.contains("missing field `questions`"), "{message}");
}

/// Valid JSON the seam could not carry is the model's to fix, never a
/// contract breach blamed on the tool.
#[tokio::test]
async fn numbers_past_an_f64_are_invalid_args_not_a_fault_of_the_tool() {
    let h = Harness::new().await;
    for number in ["1e999", "-2E+400", &"9".repeat(400)] {
        let arguments = format!(
            r#"{{"questions":[{{"id":"q","question":"?","options":[{{"label":"a","n":{number}}}]}}]}}"#
        );
        let message = invalid_args(&h, &arguments).await;
        assert!(
            message.contains("beyond the range of a 64-bit float"),
            "{message}"
        );
        assert!(message.contains("write it as a string"), "{message}");
    }
    // Within range, however written, the extra key reaches the answerer.
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let arguments = r#"{"questions":[{"id":"q","question":"?","options":[{"label":"a","n":1.7976931348623157e308,"m":1e-999}]}]}"#;
    let result = h
        .runtime
        .call(&h.root, &Default::default(), arguments)
        .await;
    assert_eq!(result.code(), None, "{}", result.text());
    let seen = probe.seen_json();
    assert_eq!(
        seen[0]["questions"][0]["options"][0]["n"],
        1.7976931348623157e308
    );
}

#[tokio::test]
async fn two_options_with_one_label_are_invalid_args_naming_both() {
    let h = Harness::new().await;
    let message = invalid_args(
        &h,
        r#"{"questions":[{"id":"q","question":"?","options":[{"label":"a"},{"label":"b"},{"label":"a"}]}]}"#,
    )
    .await;
    assert!(
        message.contains("`questions[0].options[2].label`"),
        "{message}"
    );
    assert!(message.contains("options[0]"), "{message}");
}

#[tokio::test]
async fn wrong_types_name_the_offending_field() {
    let h = Harness::new().await;
    for (arguments, path) in [
        (r#"{"questions":{}}"#, "`questions`"),
        (
            r#"{"questions":[{"id":5,"question":"?"}]}"#,
            "`questions[0].id`",
        ),
        (
            r#"{"questions":[{"id":"a","question":"?"},{"id":"b","question":true}]}"#,
            "`questions[1].question`",
        ),
        (
            r#"{"questions":[{"id":"q","question":"?","multi_select":"yes"}]}"#,
            "`questions[0].multi_select`",
        ),
        (
            r#"{"questions":[{"id":"q","question":"?","options":[{"label":"a"},{"label":1.5}]}]}"#,
            "`questions[0].options[1].label`",
        ),
        (
            r#"{"questions":[{"id":"q","question":"?","options":[{"description":"d"}]}]}"#,
            "`questions[0].options[0]`",
        ),
    ] {
        let message = invalid_args(&h, arguments).await;
        assert!(message.contains(path), "{arguments}: {message}");
        assert!(message.contains("call again"), "{message}");
    }
}

#[tokio::test]
async fn every_limit_is_enforced_and_named() {
    let h = Harness::new().await;
    let text = |n: usize| "x".repeat(n);
    let q = |field: &str, value: Value| {
        let mut q = json!({"id":"q","question":"?"});
        q[field] = value;
        json!({"questions":[q]}).to_string()
    };
    let cases = [
        (
            json!({"questions":(0..=MAX_QUESTIONS).map(|i| json!({"id":i.to_string(),"question":"?"})).collect::<Vec<_>>()}).to_string(),
            "MAX_QUESTIONS",
        ),
        (
            q("options", (0..=MAX_OPTIONS).map(|i| json!({"label":i.to_string()})).collect()),
            "MAX_OPTIONS",
        ),
        (q("id", json!(text(MAX_ID_CHARS + 1))), "MAX_ID_CHARS"),
        (q("question", json!(text(MAX_QUESTION_CHARS + 1))), "MAX_QUESTION_CHARS"),
        (q("header", json!(text(MAX_HEADER_CHARS + 1))), "MAX_HEADER_CHARS"),
        (q("options", json!([{"label": text(MAX_LABEL_CHARS + 1)}])), "MAX_LABEL_CHARS"),
        (
            q("options", json!([{"label":"a","description": text(MAX_DESCRIPTION_CHARS + 1)}])),
            "MAX_DESCRIPTION_CHARS",
        ),
        (q("options", json!([{"label":"a","blob": text(MAX_OPTION_EXTRA_BYTES)}])), "MAX_OPTION_EXTRA_BYTES"),
        (
            format!(r#"{{"questions":[],"padding":"{}"}}"#, text(MAX_ARGUMENTS_BYTES)),
            "MAX_ARGUMENTS_BYTES",
        ),
    ];
    for (arguments, limit) in cases {
        let message = invalid_args(&h, &arguments).await;
        assert!(message.contains(limit), "{limit}: {message}");
    }
}

#[tokio::test]
async fn arguments_past_the_hosts_limit_never_enter_the_component() {
    // 40 MiB would exceed the component's memory cap on the way in and be
    // blamed on the tool; the host refuses them first, as the model's fault.
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let arguments = json!({"questions":[{"id":"q","question":"x".repeat(40 << 20)}]});
    let result = h.call(arguments).await;
    assert_eq!(result.code(), Some("INVALID_ARGS"), "{}", result.text());
    assert_eq!(result.error.as_ref().unwrap().name, "InvalidArgumentsError");
    assert!(
        result
            .text()
            .contains("over the host's limit of 1048576 bytes"),
        "{}",
        result.text()
    );
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn the_largest_honest_call_fits_the_hosts_request_limit() {
    // The host's limit documents that the tool's own limits keep its
    // requests under 300 KiB; hold it to that.
    let h = Harness::with_config(RuntimeConfig {
        max_request_bytes: 300 << 10,
        ..RuntimeConfig::default()
    })
    .await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let arguments = |description: usize| {
        let question = |i: usize| {
            let options: Vec<Value> = (0..MAX_OPTIONS)
                .map(|j| json!({"label": format!("{j:0>3}"), "description": "d".repeat(description)}))
                .collect();
            json!({"id": format!("{i:0>MAX_ID_CHARS$}"), "question": "?".repeat(MAX_QUESTION_CHARS),
                   "header": "h".repeat(MAX_HEADER_CHARS), "options": options})
        };
        json!({"questions": (0..MAX_QUESTIONS).map(question).collect::<Vec<_>>()}).to_string()
    };
    // Every question and option at its limits, the descriptions as long as
    // the size limit of the arguments allows.
    let room = MAX_ARGUMENTS_BYTES - arguments(0).len();
    let arguments = arguments(room / (MAX_QUESTIONS * MAX_OPTIONS));
    assert!(arguments.len() > MAX_ARGUMENTS_BYTES - MAX_QUESTIONS * MAX_OPTIONS);
    let result = h.call(serde_json::from_str(&arguments).unwrap()).await;
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(probe.calls(), 1);
}

#[tokio::test]
async fn limits_count_characters_not_bytes() {
    let h = Harness::new().await;
    h.answerer(Behaviour::ClaimFirst);
    let header = "é".repeat(MAX_HEADER_CHARS);
    assert!(header.len() > MAX_HEADER_CHARS);
    let result = h
        .call(json!({"questions":[{"id":"q","question":"?","header":header}]}))
        .await;
    assert!(!result.is_error, "{result:?}");
}

#[tokio::test]
async fn duplicate_question_ids_are_invalid_args() {
    let h = Harness::new().await;
    let message = invalid_args(
        &h,
        r#"{"questions":[{"id":"a","question":"1?"},{"id":"a","question":"2?"}]}"#,
    )
    .await;
    assert!(message.contains("`questions[1].id`"), "{message}");
    assert!(message.contains("\"a\""), "{message}");
}

#[tokio::test]
async fn empty_required_text_is_invalid_args() {
    let h = Harness::new().await;
    let message = invalid_args(&h, r#"{"questions":[{"id":"","question":"?"}]}"#).await;
    assert!(
        message.contains("`questions[0].id`") && message.contains("empty"),
        "{message}"
    );
}
