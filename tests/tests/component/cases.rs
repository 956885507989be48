//! The shared table of tool calls (`tests/cases/tool_calls.json`): the
//! Rust host gives exactly the model-facing result each case expects, as the
//! Python package (`packages/python/tests`) and the JavaScript one
//! (`packages/js/tests`) do, so the hosts cannot drift.

use ask_user::{AnswerError, AnswerFuture, Answerer, Ask, AskError, ErrorCode, Next, Placement};
use ask_user_tests::Harness;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const TABLE: &str = include_str!("../../cases/tool_calls.json");

/// The one answerer of a case: answers, passes, or fails with a code.
struct Canned(Value);

impl Answerer for Canned {
    fn name(&self) -> &str {
        "canned"
    }

    fn answer<'a>(&'a self, _ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        let reply = &self.0;
        if reply["pass"] == true {
            return next.run();
        }
        let result = match reply.get("error") {
            Some(error) => Err(AnswerError::Seam(AskError::new(
                ErrorCode::parse(error["code"].as_str().unwrap()),
                error["message"].as_str().unwrap(),
            ))),
            None => Ok(serde_json::from_value(reply["answers"].clone()).unwrap()),
        };
        Box::pin(std::future::ready(result))
    }
}

#[tokio::test]
async fn every_case_of_the_shared_table_gives_its_result() {
    let table: Value = serde_json::from_str(TABLE).unwrap();
    let cases = table["cases"].as_array().unwrap();
    assert!(cases.len() >= 10, "the table holds the cases");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let h = Harness::new().await;
        h.runtime
            .seam()
            .waterfall()
            .register(Canned(case["reply"].clone()), Placement::default());
        let root = h.agents.register_root("session-1", None);
        let caller = match case["caller"].as_str().unwrap_or("root") {
            "root" => root,
            "delegate" => h.agents.register_delegate("helper", &root),
            "ended" => {
                let gone = h.agents.register_root("gone", None);
                h.agents.end(&gone);
                gone
            }
            other => panic!("{name}: unknown caller {other:?}"),
        };
        let result = h
            .runtime
            .call(
                &caller,
                &CancellationToken::new(),
                &case["arguments"].to_string(),
            )
            .await;
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            case["expected"],
            "case {name:?}"
        );
    }
}
