//! The component's JSON reader and writer, checked against serde_json.

use ask_user_tool::json::{self, Json, MAX_DEPTH};
use ask_user_tool::output::{AnswerItem, Output};
use serde_json::Value;

/// Ours as a serde_json value (numbers through their text).
fn to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(text) => serde_json::from_str(text).expect("a number serde_json reads"),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
    }
}

const VALID: &[&str] = &[
    "null",
    "true",
    " false ",
    "0",
    "-0",
    "12.5e-3",
    "-1E+9",
    "123456789012345678901234567890",
    // At the edges of f64: the largest finite, below the halfway point,
    // underflow to zero, zero with any exponent.
    "1.7976931348623157e308",
    "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791",
    "-0.0000001797693134862315e315",
    "1e-999",
    "0e999999",
    "-0.000e99999999999999999999999",
    r#""plain""#,
    r#""esc \" \\ \/ \b \f \n \r \t""#,
    r#""\u00e9\u4e2d\ud83d\ude00 é 中 😀""#,
    "[]",
    "{}",
    " [ 1 , [2,[3]] , {\"a\" : [ ] } ] ",
    r#"{"questions":[{"id":"q","question":"?","options":[{"label":"a","x":{"y":[1,2.5,null,true]}}]}]}"#,
    "\t\n\r {\"k\":\"v\"}\n",
];

const INVALID: &[&str] = &[
    "",
    " ",
    "{",
    "[1,]",
    "{\"a\":1,}",
    "01",
    "1.",
    ".5",
    "-",
    "1e",
    "1e+",
    "+1",
    "NaN",
    "Infinity",
    "tru",
    "nul",
    "{\"a\" 1}",
    "{a:1}",
    "[1 2]",
    "\"abc",
    "\"\\q\"",
    "\"\u{1}\"",
    "\"tab\there\"",
    "\"\\u12\"",
    "\"\\u12G4\"",
    "\"\\ud800\"",
    "\"\\udc00\"",
    "\"\\ud800\\u0041\"",
    "{} {}",
    "[] x",
    "'single'",
    // Valid JSON past f64's range: refused as serde_json refuses it.
    "1e999",
    "-1E+309",
    "1797693134862315807937289714053034150799341327100378269361737789804449682927647509466490179775872070963302864166928879109465555478519404026306574886715058206819089020007083836762738548458177115317644757302700698555713669596228429148198608349364752927190741684443655107043427115596995080930428801779041744977920",
    "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792",
    "0.00001797693134862315808e313",
    "{\"options\":[{\"label\":\"x\",\"n\":1e999}]}",
];

#[test]
fn accepts_what_serde_json_accepts_with_the_same_values() {
    for text in VALID {
        let ours = json::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(to_value(&ours), theirs, "{text}");
    }
}

#[test]
fn rejects_what_serde_json_rejects() {
    for text in INVALID {
        assert!(
            serde_json::from_str::<Value>(text).is_err(),
            "serde_json accepts {text:?}"
        );
        let error = json::parse(text).expect_err(text);
        assert!(!error.problem.is_empty());
        let lines = text.lines().count().max(1);
        assert!(
            error.line >= 1 && error.line <= lines,
            "{text:?}: {error:?}"
        );
        assert!(
            error.column >= 1 && error.column <= text.chars().count() + 1,
            "{text:?}: {error:?}"
        );
    }
}

#[test]
fn errors_say_where() {
    let error = json::parse(r#"{"questions": [1, 2,, 3]}"#).unwrap_err();
    assert_eq!((error.line, error.column), (1, 21));
    assert_eq!(error.problem, "expected a JSON value");
    let error = json::parse("[\"é\", x]").unwrap_err();
    assert_eq!(error.column, 7, "columns count characters, not bytes");
    let error = json::parse("{\n  \"a\": 1,\n  \"b\" 2\n}").unwrap_err();
    assert_eq!((error.line, error.column), (3, 7), "{error:?}");
}

#[test]
fn written_json_reads_back_the_same() {
    for text in VALID {
        let ours = json::parse(text).unwrap();
        let mut written = String::new();
        json::write(&mut written, &ours);
        assert_eq!(
            serde_json::from_str::<Value>(&written).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
        assert_eq!(
            json::parse(&written).unwrap(),
            ours,
            "numbers keep their text"
        );
    }
}

#[test]
fn strings_are_escaped_exactly_as_serde_json_escapes_them() {
    let mut every_control: String = (0u8..0x20).map(char::from).collect();
    every_control.push_str("\"\\/ é 中 😀 \u{7f} \u{2028}");
    for text in [every_control.as_str(), "", "plain", "a\"b\\c"] {
        let mut ours = String::new();
        json::write_string(&mut ours, text);
        assert_eq!(ours, serde_json::to_string(text).unwrap());
    }
}

#[test]
fn the_rendering_is_serde_jsons_compact_form() {
    let output = Output {
        answers: vec![
            AnswerItem {
                id: "a\"1".into(),
                selected: vec!["x".into(), "y\n".into()],
                custom: None,
            },
            AnswerItem {
                id: "b".into(),
                selected: vec![],
                custom: Some("free\ttext 😀".into()),
            },
        ],
    };
    assert_eq!(output.render(), serde_json::to_string(&output).unwrap());
}

#[test]
fn nesting_is_limited() {
    let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
    assert!(json::parse(&nested(MAX_DEPTH)).is_ok());
    let error = json::parse(&nested(MAX_DEPTH + 1)).unwrap_err();
    assert!(error.problem.contains("64 levels"), "{error:?}");
    // Far deeper input is refused without exhausting the stack.
    assert!(json::parse(&nested(100_000)).is_err());
}

/// Mutates the valid documents at random (a fixed seed, so the run repeats)
/// and checks that both parsers agree on every result.
#[test]
fn agrees_with_serde_json_on_twenty_thousand_mutations() {
    let alphabet: Vec<char> = "{}[]\",:\\/ 0123456789.eE+-truefalsn\u{1}\té😀"
        .chars()
        .collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |bound: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % bound as u64) as usize
    };
    for round in 0..20_000 {
        let mut chars: Vec<char> = VALID[round % VALID.len()].chars().collect();
        for _ in 0..1 + next(3) {
            let at = next(chars.len() + 1);
            match next(3) {
                0 if at < chars.len() => {
                    chars.remove(at);
                }
                1 if at < chars.len() => chars[at] = alphabet[next(alphabet.len())],
                _ => chars.insert(at, alphabet[next(alphabet.len())]),
            }
        }
        let text: String = chars.into_iter().collect();
        let ours = json::parse(&text);
        let theirs = serde_json::from_str::<Value>(&text);
        assert_eq!(
            ours.is_ok(),
            theirs.is_ok(),
            "{text:?}: ours {ours:?}, serde_json {theirs:?}"
        );
        if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
            assert_eq!(to_value(&ours), theirs, "{text:?}");
        }
    }
}
