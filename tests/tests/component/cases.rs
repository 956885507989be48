//! The shared table of tool calls (`tests/cases/tool_calls.json`): the
//! Rust host gives exactly the model-facing result each case expects, as the
//! Python package (`packages/python/tests`) and the JavaScript one
//! (`packages/js/tests`) do, so the hosts cannot drift.

use std::sync::{Arc, Mutex};

use ask_user::agents::DEFAULT_MAX_DELEGATED_ASKS;
use ask_user::{
    AnswerError, AnswerFuture, Answerer, Ask, AskError, Delegated, ErrorCode, Next, Placement,
};
use ask_user_tests::Harness;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const TABLE: &str = include_str!("../../cases/tool_calls.json");

/// The one answerer of a case: answers, passes, or fails with a code; and
/// records who asked (a relayed sub-agent's chain).
struct Canned(Value, Arc<Mutex<Vec<Vec<String>>>>);

impl Answerer for Canned {
    fn name(&self) -> &str {
        "canned"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        self.1.lock().unwrap().push(ask.asked_by.clone());
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
        if let Some(text) = case["replyJson"].as_str() {
            // What only JSON text can hold (half of a surrogate pair): this
            // host's strings cannot, and its JSON reading (a bridge's
            // frames, a page's answers, an answers file) refuses it, so
            // no answerer of it can give it.
            assert!(
                serde_json::from_str::<Value>(text).is_err(),
                "case {name:?}: read"
            );
            let whole = text.replace(r"\ud83d", r"\ud83d\ude00");
            assert!(
                serde_json::from_str::<Value>(&whole).is_ok(),
                "case {name:?}: the pair made whole is read"
            );
            continue;
        }
        let policy = &case["policy"];
        let delegated = match policy["delegated"].as_str().unwrap_or("refuse") {
            "refuse" => Delegated::Refuse,
            "relay" => Delegated::Relay {
                max_asks: policy["maxDelegatedAsks"]
                    .as_u64()
                    .map_or(DEFAULT_MAX_DELEGATED_ASKS, |n| n as u32),
            },
            other => panic!("{name}: unknown policy {other:?}"),
        };
        let h = Harness::with_seam(|seam| seam.with_delegated(delegated)).await;
        let asked_by = Arc::new(Mutex::new(Vec::new()));
        h.runtime.seam().waterfall().register(
            Canned(case["reply"].clone(), asked_by.clone()),
            Placement::default(),
        );
        let root = h.agents.register_root("session-1", None);
        let caller = match case["caller"].as_str().unwrap_or("root") {
            "root" => root,
            "delegate" => h.agents.register_delegate("helper", &root),
            "ended" => {
                let gone = h.agents.register_root("gone", None);
                h.agents.end(&gone);
                gone
            }
            "orphan" => {
                let parent = h.agents.register_root("parent", None);
                let orphan = h.agents.register_delegate("orphan", &parent);
                h.agents.end(&parent);
                orphan
            }
            other => panic!("{name}: unknown caller {other:?}"),
        };
        let (arguments, turn) = (case["arguments"].to_string(), CancellationToken::new());
        if case["cancelled"] == true {
            turn.cancel();
        }
        let call = || h.runtime.call(&caller, &turn, &arguments);
        for _ in 0..case["asksBefore"].as_u64().unwrap_or(0) {
            assert!(!call().await.is_error, "case {name:?}: an earlier ask");
        }
        let result = call().await;
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            case["expected"],
            "case {name:?}"
        );
        let expected: Vec<String> =
            serde_json::from_value(case["askedBy"].clone()).unwrap_or_default();
        for seen in asked_by.lock().unwrap().iter() {
            assert_eq!(
                seen, &expected,
                "case {name:?}: who asked, as the answerer saw it"
            );
        }
    }
}
