//! The web answerer end to end in a real browser: headless Chromium driven
//! through chromedriver, the real component in the real host.

use ask_user_test_support::browser;
use browser::{BROWSER, Browser, WAIT};

use std::sync::Arc;
use std::time::Duration;

use ask_user::answerers::web::{WebAnswerer, WebConfig};
use ask_user::{Answerer, Delegated, Placement, ToolResult};
use ask_user_tests::{Behaviour, Harness, one_question, wait_until};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// The real component with a web answerer in front, and a browser on its page.
struct Setup {
    h: Arc<Harness>,
    web: Arc<WebAnswerer>,
    browser: Browser,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

async fn setup() -> Setup {
    setup_with(Harness::new().await, WebConfig::default()).await
}

/// [`setup`] on harness `h`, the web answerer started with `config` (its
/// grace always [`WAIT`]).
async fn setup_with(h: Harness, config: WebConfig) -> Setup {
    let turn = BROWSER.lock().await;
    let h = Arc::new(h);
    let web = web_in_front(
        &h,
        WebConfig {
            grace: Some(WAIT),
            ..config
        },
    )
    .await;
    let browser = Browser::start().await;
    browser.client.goto(&web.url()).await.unwrap();
    browser.wait_for("#status").await;
    Setup {
        h,
        web,
        browser,
        _turn: turn,
    }
}

/// The real component with a web answerer first in its chain.
async fn web_first(grace: Duration) -> (Arc<Harness>, Arc<WebAnswerer>) {
    let h = Arc::new(Harness::new().await);
    let web = web_in_front(
        &h,
        WebConfig {
            grace: Some(grace),
            ..WebConfig::default()
        },
    )
    .await;
    (h, web)
}

/// A web answerer started with `config`, first in `h`'s chain.
async fn web_in_front(h: &Harness, config: WebConfig) -> Arc<WebAnswerer> {
    let web = Arc::new(WebAnswerer::start(config).await.unwrap());
    h.seam()
        .waterfall()
        .register_arc(web.clone(), Placement::default());
    web
}

impl Setup {
    /// Picks the second option ("B") of `call`'s one question on the page,
    /// sends it, checks that the call got it, and closes the browser.
    async fn picks_b(self, call: tokio::task::JoinHandle<ToolResult>) {
        self.browser.click(r#"input[data-option="1"]"#).await;
        self.browser.click("button.send").await;
        assert_eq!(
            result(call).await.text(),
            r#"{"answers":[{"id":"q","selected":["B"]}]}"#
        );
        self.browser.close().await;
    }

    /// Calls the tool in the background, returning the pending result.
    fn call(
        &self,
        arguments: Value,
        signal: CancellationToken,
    ) -> tokio::task::JoinHandle<ToolResult> {
        self.call_as(&self.h.root, arguments, signal)
    }

    /// [`call`](Self::call) as `caller`.
    fn call_as(
        &self,
        caller: &ask_user::AgentHandle,
        arguments: Value,
        signal: CancellationToken,
    ) -> tokio::task::JoinHandle<ToolResult> {
        let (h, caller) = (self.h.clone(), caller.clone());
        tokio::spawn(async move {
            h.runtime
                .call(&caller, &signal, &arguments.to_string())
                .await
        })
    }
}

async fn result(call: tokio::task::JoinHandle<ToolResult>) -> ToolResult {
    tokio::time::timeout(WAIT, call)
        .await
        .expect("the call returns")
        .unwrap()
}

#[tokio::test]
async fn a_pending_call_appears_and_the_chosen_label_comes_back() {
    let s = setup().await;
    let call = s.call(
        json!({"questions":[{"id":"env","header":"Deploy","question":"Where to?",
            "options":[{"label":"Staging (Recommended)","description":"Safe."},{"label":"Production"}]}]}),
        CancellationToken::new(),
    );
    let card = s.browser.wait_for("form.batch").await;
    let text = card.text().await.unwrap();
    for shown in [
        "Deploy",
        "Where to?",
        "Staging (Recommended)★",
        "Safe.",
        "asked by root",
    ] {
        assert!(text.contains(shown), "{shown:?} not in {text:?}");
    }
    assert_eq!(text.matches("ecommended").count(), 1, "said once: {text:?}");
    // The recommended choice starts chosen, as in an MCP client's form.
    let recommended = s
        .browser
        .wait_for(r#"fieldset[data-question="env"] input[data-option="0"]"#)
        .await;
    assert_eq!(
        recommended.prop("checked").await.unwrap().as_deref(),
        Some("true")
    );
    assert_eq!(
        s.browser.client.title().await.unwrap(),
        "(1) ask-user: questions for you"
    );
    s.browser
        .click(r#"fieldset[data-question="env"] input[data-option="1"]"#)
        .await;
    s.browser.click("button.send").await;
    let result = result(call).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"env","selected":["Production"]}]}"#
    );
    let end = s.browser.wait_for(".ended").await.text().await.unwrap();
    assert_eq!(end, "Answers sent");
    s.browser
        .status_says("Nothing waits for you now — you can close this tab")
        .await;
    assert_eq!(
        s.browser.client.title().await.unwrap(),
        "ask-user: questions for you"
    );
    // When the agent's side stops serving the page, what was sent stays
    // said: not an alarm.
    s.web.close().await;
    s.browser
        .status_says("Your answers were sent: you can close this tab")
        .await;
    s.browser.close().await;
}

/// The model's line breaks in a question and a description are kept, as
/// text (a plan under review stays a list, not one paragraph).
#[tokio::test]
async fn line_breaks_are_kept() {
    let s = setup().await;
    let _call = s.call(
        json!({"questions":[{"id":"plan","question":"Run this plan?\n1. build\n2. deploy",
            "options":[{"label":"Yes","description":"first line\nsecond line"}]}]}),
        CancellationToken::new(),
    );
    let card = s.browser.wait_for("form.batch").await;
    let text = card.text().await.unwrap();
    assert!(text.contains("Run this plan?"), "{text:?}");
    let steps = s
        .browser
        .client
        .find_all(fantoccini::Locator::Css("legend ol li"))
        .await
        .unwrap();
    let mut shown = Vec::new();
    for step in steps {
        shown.push(step.text().await.unwrap());
    }
    assert_eq!(shown, ["build", "deploy"], "a numbered list");
    assert!(text.contains("first line\nsecond line"), "{text:?}");
    s.browser.close().await;
}

/// The Markdown models write is shown as meant, safely: code, emphasis,
/// lists and fenced code; a link shows its address and is never followed;
/// HTML in it stays text.
#[tokio::test]
async fn a_safe_part_of_markdown_is_rendered() {
    let s = setup().await;
    let question = "Run `make deploy` on **prod**, *now*?\n\n- one\n- two\n\n```\nrm -rf build\n```\nSee [the runbook](https://example.com/run) <img src=x onerror=\"document.title='pwned'\">";
    let _call = s.call(
        json!({"questions":[{"id":"q","question":question,
            "options":[{"label":"Yes","description":"uses `cargo` _twice_"}]}]}),
        CancellationToken::new(),
    );
    let card = s.browser.wait_for("form.batch").await;
    let text = card.text().await.unwrap();
    let only = |css: &'static str| {
        let browser = &s.browser;
        async move {
            let found = browser
                .client
                .find_all(fantoccini::Locator::Css(css))
                .await
                .unwrap();
            let mut texts = Vec::new();
            for element in found {
                texts.push(element.text().await.unwrap());
            }
            texts
        }
    };
    assert_eq!(only("legend code").await, ["make deploy", "rm -rf build"]);
    assert_eq!(only("legend strong").await, ["prod"]);
    assert_eq!(only("legend em").await, ["now"]);
    assert_eq!(only("legend ul li").await, ["one", "two"]);
    assert_eq!(only("legend pre code").await, ["rm -rf build"]);
    assert_eq!(only(".description code").await, ["cargo"]);
    assert_eq!(only(".description em").await, ["twice"]);
    assert!(
        text.contains("the runbook (https://example.com/run)"),
        "{text}"
    );
    assert!(text.contains("<img src=x"), "HTML stays text: {text}");
    assert_eq!(
        s.browser.count("form.batch a").await,
        0,
        "no link to follow"
    );
    assert_eq!(s.browser.count("form.batch img").await, 0);
    assert!(!text.contains("**") && !text.contains('`'), "{text}");
    s.browser.close().await;
}

/// A question answered elsewhere (another tab, the phone) leaves a note
/// where its card was, not a card that silently vanished.
#[tokio::test]
async fn a_question_answered_elsewhere_says_so() {
    let s = setup().await;
    let call = s.call(one_question(&["A", "B"]), CancellationToken::new());
    let card = s.browser.wait_for("form.batch").await;
    let event = card.attr("data-event").await.unwrap().unwrap();
    let token = s.web.url().split("token=").nth(1).unwrap().to_owned();
    let answer = json!({"eventId": event, "outcome": {"kind":"result","value":{"answers":[{"id":"q","selected":["B"]}]}}});
    let (status, _) = http(
        s.web.address(),
        &post(s.web.address(), &token, None, &answer.to_string()),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        result(call).await.text(),
        r#"{"answers":[{"id":"q","selected":["B"]}]}"#
    );
    let end = s.browser.wait_for(".ended").await.text().await.unwrap();
    assert_eq!(end, "Answered elsewhere");
    s.browser.close().await;
}

/// Answers once told to, at "the terminal": what races a page in
/// `ask-user ask --web`.
struct AtTheTerminal(Arc<tokio::sync::Notify>);

impl Answerer for AtTheTerminal {
    fn name(&self) -> &str {
        "terminal"
    }

    fn place(&self) -> &str {
        "at the terminal"
    }

    fn answer<'a>(
        &'a self,
        _: &'a ask_user::Ask,
        _: ask_user::Next<'a>,
    ) -> ask_user::AnswerFuture<'a> {
        Box::pin(async move {
            self.0.notified().await;
            Ok(vec![ask_user::Answer {
                selected: vec!["A".into()],
                ..ask_user::Answer::skipped("q".to_owned())
            }])
        })
    }
}

/// A question the terminal racing the page answered first says so where
/// its card was, not that the agent withdrew it.
#[tokio::test]
async fn a_question_answered_at_the_terminal_says_so() {
    let turn = BROWSER.lock().await;
    let h = Arc::new(Harness::new().await);
    let web = Arc::new(
        WebAnswerer::start(WebConfig {
            grace: Some(WAIT),
            ..WebConfig::default()
        })
        .await
        .unwrap(),
    );
    let go = Arc::new(tokio::sync::Notify::new());
    let terminal: Arc<dyn Answerer> = Arc::new(AtTheTerminal(go.clone()));
    let race = ask_user::Race::new(vec![web.clone(), terminal]);
    h.seam()
        .waterfall()
        .register_arc(Arc::new(race), Placement::default());
    let browser = Browser::start().await;
    browser.client.goto(&web.url()).await.unwrap();
    browser.wait_for("#status").await;
    let s = Setup {
        h,
        web,
        browser,
        _turn: turn,
    };
    let call = s.call(one_question(&["A", "B"]), CancellationToken::new());
    s.browser.wait_for("form.batch").await;
    go.notify_one();
    assert_eq!(
        result(call).await.text(),
        r#"{"answers":[{"id":"q","selected":["A"]}]}"#
    );
    let end = s.browser.wait_for(".ended").await.text().await.unwrap();
    assert_eq!(end, "Answered at the terminal");
    s.browser.close().await;
}

#[tokio::test]
async fn multi_select_and_own_words_come_back_together() {
    let s = setup().await;
    let call = s.call(
        json!({"questions":[
            {"id":"checks","question":"Which checks?","multi_select":true,
             "options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},
            {"id":"skipme","question":"Anything else?"}]}),
        CancellationToken::new(),
    );
    s.browser
        .click(r#"fieldset[data-question="checks"] input[data-option="0"]"#)
        .await;
    s.browser
        .click(r#"fieldset[data-question="checks"] input[data-option="2"]"#)
        .await;
    let own = s
        .browser
        .wait_for(r#"fieldset[data-question="checks"] [data-custom]"#)
        .await;
    own.send_keys("  and smoke  ").await.unwrap();
    s.browser
        .click(r#"fieldset[data-question="skipme"] input[data-skip]"#)
        .await;
    s.browser.click("button.send").await;
    let result = result(call).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"checks","selected":["Unit","Load"],"custom":"and smoke"},{"id":"skipme","selected":[]}]}"#
    );
    s.browser.close().await;
}

#[tokio::test]
async fn dismissing_is_ask_cancelled() {
    let s = setup().await;
    let call = s.call(one_question(&["A", "B"]), CancellationToken::new());
    // Dismissing asks first; the second click dismisses.
    s.browser.click("button.dismiss").await;
    let asked = s.browser.wait_for(".notice").await.text().await.unwrap();
    assert!(asked.contains("you will not answer"), "{asked}");
    assert_eq!(s.web.pending(), 1, "nothing sent yet");
    assert_eq!(s.browser.count("form.batch").await, 1);
    s.browser.click("button.dismiss").await;
    let result = result(call).await;
    assert_eq!(result.code(), Some("ASK_CANCELLED"));
    let end = s.browser.wait_for(".ended").await.text().await.unwrap();
    assert_eq!(end, "Dismissed: the agent was told you will not answer");
    assert_eq!(s.browser.count("form.batch").await, 0);
    s.browser.status_says("Nothing waits for you now").await;
    s.browser.close().await;
}

/// With one question answered and another still waiting, the page says
/// what waits and never suggests closing it; each field is labelled for a
/// screen reader, and what the page asks before sending is announced.
#[tokio::test]
async fn the_page_never_suggests_closing_while_a_question_waits() {
    let s = setup().await;
    let first = s.call(
        json!({"questions":[{"id":"a","header":"Deploy","question":"Where to?",
            "options":[{"label":"Staging"},{"label":"Production"}]}]}),
        CancellationToken::new(),
    );
    s.browser.wait_for("form.batch").await;
    let second = s.call(one_question(&["A", "B"]), CancellationToken::new());
    s.browser
        .status_says("2 questions wait for your answer")
        .await;
    assert_eq!(
        s.browser.client.title().await.unwrap(),
        "(2) ask-user: questions for you"
    );
    let legend = s
        .browser
        .wait_for("fieldset[data-question=\"a\"] legend")
        .await;
    assert_eq!(
        legend.prop("textContent").await.unwrap().as_deref(),
        Some("Deploy: Where to?"),
        "the header and the question are read apart"
    );
    let own = s
        .browser
        .wait_for("fieldset[data-question=\"a\"] textarea")
        .await;
    assert_eq!(
        own.attr("aria-label").await.unwrap().as_deref(),
        Some("Or type your own answer: Where to?")
    );
    let notice = s.browser.wait_for("form.batch .notice").await;
    assert_eq!(
        notice.attr("aria-live").await.unwrap().as_deref(),
        Some("polite")
    );
    s.browser
        .click(r#"fieldset[data-question="a"] input[data-option="0"]"#)
        .await;
    s.browser
        .click(r#"form.batch:has(fieldset[data-question="a"]) button.send"#)
        .await;
    assert!(!result(first).await.is_error);
    s.browser
        .status_says("1 question waits for your answer")
        .await;
    let shown = s.browser.wait_for("body").await.text().await.unwrap();
    assert!(!shown.contains("close this tab"), "{shown}");
    s.browser
        .click(r#"fieldset[data-question="q"] input[data-option="1"]"#)
        .await;
    s.browser.click("form.batch button.send").await;
    assert!(!result(second).await.is_error);
    s.browser
        .status_says("Nothing waits for you now — you can close this tab")
        .await;
    s.browser.close().await;
}

/// Enter in an own-words field starts a new line; it never sends the batch.
#[tokio::test]
async fn enter_in_a_text_field_is_a_new_line_not_a_send() {
    let s = setup().await;
    let call = s.call(
        json!({"questions":[{"id":"why","question":"Why?"}]}),
        CancellationToken::new(),
    );
    let own = s.browser.wait_for("[data-custom]").await;
    let height = |own: &fantoccini::elements::Element| {
        let own = own.clone();
        async move { own.rectangle().await.unwrap().3 }
    };
    let one_line = height(&own).await;
    let enter = char::from(fantoccini::key::Key::Enter);
    own.send_keys(&format!("line one{enter}line two{enter}line three"))
        .await
        .unwrap();
    assert_eq!(s.web.pending(), 1, "Enter sent nothing");
    let three_lines = height(&own).await;
    assert!(
        three_lines > 2.0 * one_line,
        "the field grows with its lines: {one_line}px, then {three_lines}px"
    );
    s.browser.click("button.send").await;
    assert_eq!(
        result(call).await.text(),
        r#"{"answers":[{"id":"why","selected":[],"custom":"line one\nline two\nline three"}]}"#
    );
    s.browser.close().await;
}

/// Sending with questions unanswered asks first, saying how many; a change
/// asks again; the second click sends them as skipped.
#[tokio::test]
async fn unanswered_questions_are_sent_as_skipped_only_when_confirmed() {
    let s = setup().await;
    let call = s.call(
        json!({"questions":[
            {"id":"a","question":"First?","options":[{"label":"A1"},{"label":"A2"}]},
            {"id":"b","question":"Second?","options":[{"label":"B1"}]},
            {"id":"c","question":"Third?"}]}),
        CancellationToken::new(),
    );
    // The person sees three questions, and is told of three.
    s.browser
        .status_says("3 questions wait for your answer")
        .await;
    s.browser.click("button.send").await;
    let asked = s.browser.wait_for(".notice").await.text().await.unwrap();
    assert_eq!(asked, "3 unanswered — send them as skipped?");
    s.browser
        .click(r#"fieldset[data-question="a"] input[data-option="1"]"#)
        .await;
    let notice = s.browser.wait_for(".notice").await.text().await.unwrap();
    assert_eq!(notice, "", "a change asks again");
    s.browser.click("button.send").await;
    let asked = s.browser.wait_for(".notice").await.text().await.unwrap();
    assert_eq!(asked, "2 unanswered — send them as skipped?");
    let button = s
        .browser
        .wait_for("button.send")
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(button, "Send with 2 skipped");
    assert_eq!(s.web.pending(), 1, "nothing sent yet");
    s.browser.click("button.send").await;
    assert_eq!(
        result(call).await.text(),
        r#"{"answers":[{"id":"a","selected":["A2"]},{"id":"b","selected":[]},{"id":"c","selected":[]}]}"#
    );
    s.browser.close().await;
}

/// Skip and a pick (or own words) never both hold: the last one chosen stays.
#[tokio::test]
async fn skip_and_an_answer_exclude_each_other() {
    let s = setup().await;
    let call = s.call(
        json!({"questions":[{"id":"m","question":"Which?","multi_select":true,
            "options":[{"label":"X"},{"label":"Y"}]}]}),
        CancellationToken::new(),
    );
    let checked = |css: &'static str| {
        let browser = &s.browser;
        async move { browser.wait_for(css).await.prop("checked").await.unwrap() }
    };
    s.browser.click(r#"input[data-option="0"]"#).await;
    s.browser.click("input[data-skip]").await;
    assert_eq!(
        checked(r#"input[data-option="0"]"#).await.as_deref(),
        Some("false")
    );
    s.browser.click(r#"input[data-option="1"]"#).await;
    assert_eq!(checked("input[data-skip]").await.as_deref(), Some("false"));
    s.browser.click("button.send").await;
    assert_eq!(
        result(call).await.text(),
        r#"{"answers":[{"id":"m","selected":["Y"]}]}"#
    );
    s.browser.close().await;
}

#[tokio::test]
async fn an_aborted_call_disappears_from_the_page() {
    let s = setup().await;
    let signal = CancellationToken::new();
    let call = s.call(one_question(&["A"]), signal.clone());
    s.browser.wait_for("form.batch").await;
    signal.cancel();
    assert_eq!(result(call).await.code(), Some("ASK_ABORTED"));
    let end = s.browser.wait_for(".ended").await.text().await.unwrap();
    assert_eq!(end, "The agent withdrew this question");
    assert_eq!(s.browser.count("form.batch").await, 0);
    s.browser.close().await;
}

#[tokio::test]
async fn model_markup_is_shown_as_text() {
    let s = setup().await;
    let markup = r#"<b>bold</b><img src=x onerror="document.title='pwned'">"#;
    let call = s.call(
        json!({"questions":[{"id":"q","header":"<i>h</i>","question":"<script>alert(1)</script>",
            "options":[{"label":markup,"description":"<u>d</u>"}]}]}),
        CancellationToken::new(),
    );
    let card = s.browser.wait_for("form.batch").await;
    let text = card.text().await.unwrap();
    assert!(text.contains(markup), "{text}");
    assert!(
        text.contains("<script>alert(1)</script>") && text.contains("<i>h</i>"),
        "{text}"
    );
    for tag in [
        "form.batch b",
        "form.batch img",
        "form.batch i",
        "form.batch u",
        "form.batch script",
    ] {
        assert_eq!(
            s.browser.count(tag).await,
            0,
            "{tag} was made from model text"
        );
    }
    assert_ne!(s.browser.client.title().await.unwrap(), "pwned");
    s.browser.click(r#"input[data-option="0"]"#).await;
    s.browser.click("button.send").await;
    let result = result(call).await;
    let answers: Value = serde_json::from_str(result.text()).unwrap();
    assert_eq!(answers["answers"][0]["selected"][0], markup);
    s.browser.close().await;
}

#[tokio::test]
async fn a_reloaded_page_shows_the_pending_questions_again() {
    let s = setup().await;
    let call = s.call(one_question(&["A", "B"]), CancellationToken::new());
    s.browser.wait_for("form.batch").await;
    s.browser.client.refresh().await.unwrap();
    s.picks_b(call).await;
}

/// A raw HTTP/1.1 request: (status, body).
async fn http(address: std::net::SocketAddr, request: &str) -> (u16, String) {
    let response = http_response(address, request).await;
    let status = response[9..12].parse().unwrap();
    let body = response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

/// A raw HTTP/1.1 request's whole response, head included.
async fn http_response(address: std::net::SocketAddr, request: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut response))
        .await
        .expect("the server answers")
        .unwrap();
    response
}

/// Reads `stream` until `text` has come, returning all that came.
async fn read_until(stream: &mut tokio::net::TcpStream, text: &str) -> String {
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains(text) {
        let mut buffer = [0; 4096];
        let read = tokio::time::timeout(WAIT, stream.read(&mut buffer))
            .await
            .unwrap_or_else(|_| panic!("{text:?} comes"))
            .unwrap();
        assert_ne!(read, 0, "the stream ended before {text:?}");
        seen.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// Calls the tool with `arguments` in the background, once a page's event
/// stream is open; the pending call, the event id the page was sent, and
/// the page's stream (open while it is kept).
async fn asked_on_a_page(
    h: &Arc<Harness>,
    web: &WebAnswerer,
    arguments: Value,
) -> (
    tokio::task::JoinHandle<ToolResult>,
    String,
    tokio::net::TcpStream,
) {
    let mut page = open_events(web).await;
    let call = {
        let h = h.clone();
        tokio::spawn(async move {
            h.runtime
                .call(&h.root, &Default::default(), &arguments.to_string())
                .await
        })
    };
    let frames = read_until(&mut page, r#""type":"waterfall""#).await;
    let event = frames
        .split(r#""eventId":""#)
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    (call, event, page)
}

#[tokio::test]
async fn answers_that_do_not_fit_are_refused_when_posted_and_the_question_stays_open() {
    let (h, web) = web_first(WAIT).await;
    let (call, event, _page) = asked_on_a_page(&h, &web, one_question(&["A", "B"])).await;
    let token = web.url().split("token=").nth(1).unwrap().to_owned();
    let answering = |answer: Value| {
        json!({"eventId": event, "outcome": {"kind":"result","value":{"answers":[answer]}}})
            .to_string()
    };
    let address = web.address();
    for (misfit, says) in [
        (
            json!({"id":"q","selected":["C"]}),
            "no option labelled \"C\"",
        ),
        (
            json!({"id":"q","selected":["A"],"custom":"mine"}),
            "both a selected label and own words",
        ),
        (
            json!({"id":"q","selected":[],"custom":"x".repeat(16_001)}),
            "over the limit of 16000",
        ),
    ] {
        let (status, body) = http(address, &post(address, &token, None, &answering(misfit))).await;
        assert_eq!((status, web.pending()), (422, 1), "{body}");
        let refusal: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(refusal["error"]["code"], "invalid_answer", "{refusal}");
        let message = refusal["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
    }
    let fits = answering(json!({"id":"q","selected":["B"]}));
    assert_eq!(
        http(address, &post(address, &token, None, &fits)).await.0,
        200
    );
    assert_eq!(
        result(call).await.text(),
        r#"{"answers":[{"id":"q","selected":["B"]}]}"#
    );
}

/// The most a human may answer (every question of a full batch answered
/// with the longest own words, in four-byte characters) is taken: the
/// page's body limit is derived from the answer limits.
#[tokio::test]
async fn the_largest_answer_the_tool_takes_is_taken_from_a_page() {
    use ask_user::seam::limits::{MAX_CUSTOM_CHARS, MAX_QUESTIONS};
    let (h, web) = web_first(WAIT).await;
    let ids: Vec<String> = (1..=MAX_QUESTIONS).map(|n| format!("q{n}")).collect();
    let questions: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "question": "Anything to add?"}))
        .collect();
    let (call, event, _page) = asked_on_a_page(&h, &web, json!({ "questions": questions })).await;
    let words = "\u{1F600}".repeat(MAX_CUSTOM_CHARS);
    let answers: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "selected": [], "custom": words}))
        .collect();
    let body = json!({"eventId": event, "outcome": {"kind":"result","value":{"answers": answers}}})
        .to_string();
    assert!(body.len() > 1_000_000, "a body of {} bytes", body.len());
    let token = web.url().split("token=").nth(1).unwrap().to_owned();
    let address = web.address();
    let (status, said) = http(address, &post(address, &token, None, &body)).await;
    assert_eq!(status, 200, "{said}");
    let result = result(call).await;
    assert!(!result.is_error, "{}", result.text());
    assert!(result.text().contains(&words));
}

/// No inline script runs but the page's own: the policy names a nonce,
/// fresh for every response, that only the page's script and style carry.
#[tokio::test]
async fn the_page_runs_only_its_own_script() {
    let web = WebAnswerer::start(WebConfig::default()).await.unwrap();
    let token = web.url().split("token=").nth(1).unwrap().to_owned();
    let get = format!(
        "GET /?token={token} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        web.address()
    );
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let response = http_response(web.address(), &get).await;
        let policy = response
            .lines()
            .find_map(|l| l.strip_prefix("content-security-policy: "))
            .expect("a content security policy");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        let nonce = policy
            .split("'nonce-")
            .nth(1)
            .unwrap()
            .split('\'')
            .next()
            .unwrap();
        assert!(nonce.len() >= 32, "{nonce}");
        assert!(
            response.contains(&format!("<script nonce=\"{nonce}\">")),
            "the script carries it"
        );
        assert!(
            response.contains(&format!("<style nonce=\"{nonce}\">")),
            "the style carries it"
        );
        nonces.push(nonce.to_owned());
    }
    assert_ne!(nonces[0], nonces[1]);
}

/// A client that connects and says nothing, or goes quiet after a request
/// on a kept-alive connection, is cut off after the header timeout instead
/// of holding a connection (and a descriptor) for ever.
#[tokio::test]
async fn silent_and_idle_connections_are_closed() {
    let web = WebAnswerer::start(WebConfig::default()).await.unwrap();
    let token = web.url().split("token=").nth(1).unwrap().to_owned();
    let mut silent = tokio::net::TcpStream::connect(web.address()).await.unwrap();
    let mut idle = tokio::net::TcpStream::connect(web.address()).await.unwrap();
    let get = format!(
        "GET /?token={token} HTTP/1.1\r\nHost: {}\r\n\r\n",
        web.address()
    );
    idle.write_all(get.as_bytes()).await.unwrap();
    read_until(&mut idle, "</html>").await;
    let bound = ask_user::serve::HEADER_TIMEOUT + WAIT;
    for (name, stream) in [("silent", &mut silent), ("idle", &mut idle)] {
        let mut rest = Vec::new();
        let ended = tokio::time::timeout(bound, stream.read_to_end(&mut rest)).await;
        assert!(
            ended.is_ok(),
            "the {name} connection is closed by the server"
        );
    }
}

#[tokio::test]
async fn a_page_that_falls_behind_is_cut_off_to_reload_what_is_pending() {
    let (h, web) = web_first(WAIT).await;
    // A page that stops reading its stream (a phone gone to sleep).
    let mut page = open_events(&web).await;
    // Far more frames than the socket buffers and the backlog hold.
    let asks = 3 * ask_user::answerers::web::FRAME_BACKLOG;
    let signal = CancellationToken::new();
    let pending: Vec<_> = (0..asks)
        .map(|i| {
            let (h, signal) = (h.clone(), signal.clone());
            tokio::spawn(async move {
                let mut question = ask_user::Question::new(format!("q{i}"), "x".repeat(64 << 10));
                question.header = Some(format!("{i}"));
                let request = ask_user::AskRequest {
                    questions: vec![question],
                };
                h.seam().ask(request, Some(&h.root), &signal).await
            })
        })
        .collect();
    wait_until("every ask reaches the page", || web.pending() == asks).await;
    // The stream ends, instead of going on with a gap the page cannot see.
    let mut received = Vec::new();
    tokio::time::timeout(WAIT, page.read_to_end(&mut received))
        .await
        .expect("the lagging page's stream ends")
        .unwrap();
    let received = String::from_utf8_lossy(&received);
    let frames = received.matches(r#""type":"waterfall""#).count();
    assert!(frames < asks, "{frames} of {asks} frames");
    signal.cancel();
    for ask in pending {
        let error = ask.await.unwrap().unwrap_err();
        assert_eq!(error.code().map(|c| c.as_str()), Some("ASK_ABORTED"));
    }
    assert_eq!(web.pending(), 0);
}

#[tokio::test]
async fn a_question_whose_pages_all_left_passes_on_after_the_grace_period() {
    // Long enough for a reconnect while Chromium runs beside on two cores.
    let grace = Duration::from_secs(2);
    let (h, web) = web_first(grace).await;
    let after = h.answerer(Behaviour::ClaimFirst);
    let page = open_events(&web).await;
    let call = {
        let h = h.clone();
        tokio::spawn(async move {
            h.runtime
                .call(
                    &h.root,
                    &CancellationToken::new(),
                    &one_question(&["A", "B"]).to_string(),
                )
                .await
        })
    };
    wait_until("the question reaches the page", || web.pending() == 1).await;
    // A reload: the page leaves and another comes back within the grace
    // period. The question stays on the page.
    drop(page);
    let page = open_events(&web).await;
    tokio::time::sleep(grace + grace / 2).await;
    assert_eq!((web.pending(), after.calls()), (1, 0));
    // The tab is closed for good: the question is withdrawn and passed on.
    drop(page);
    let result = result(call).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"q","selected":["A"]}]}"#
    );
    assert_eq!((web.pending(), after.calls()), (0, 1));
}

/// A page's event stream, open until dropped, once the server has said
/// `ready` on it.
async fn open_events(web: &WebAnswerer) -> tokio::net::TcpStream {
    let token = web.url().split("token=").nth(1).unwrap().to_owned();
    let mut page = tokio::net::TcpStream::connect(web.address()).await.unwrap();
    let request = format!(
        "GET /events?token={token} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        web.address()
    );
    page.write_all(request.as_bytes()).await.unwrap();
    read_until(&mut page, r#""type":"ready""#).await;
    page
}

fn post(address: std::net::SocketAddr, token: &str, origin: Option<&str>, body: &str) -> String {
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /answer HTTP/1.1\r\nHost: {address}\r\nx-ask-user-token: {token}\r\n{origin}\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn the_first_answer_wins_and_a_second_gets_409() {
    let s = setup().await;
    let call = s.call(one_question(&["A", "B"]), CancellationToken::new());
    let card = s.browser.wait_for("form.batch").await;
    let event = card.attr("data-event").await.unwrap().unwrap();
    s.browser.click(r#"input[data-option="0"]"#).await;
    s.browser.click("button.send").await;
    assert_eq!(
        result(call).await.text(),
        r#"{"answers":[{"id":"q","selected":["A"]}]}"#
    );
    let token = s.web.url().split("token=").nth(1).unwrap().to_owned();
    let late = json!({"eventId": event, "outcome": {"kind":"result","value":{"answers":[{"id":"q","selected":["B"]}]}}});
    let (status, _) = http(
        s.web.address(),
        &post(s.web.address(), &token, None, &late.to_string()),
    )
    .await;
    assert_eq!(status, 409);
    s.browser.close().await;
}

#[tokio::test]
async fn requests_without_the_token_or_from_elsewhere_are_refused() {
    let web = WebAnswerer::start(WebConfig::default()).await.unwrap();
    let address = web.address();
    let token = web.url().split("token=").nth(1).unwrap().to_owned();
    let get = |path: &str, host: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    };
    let here = address.to_string();
    assert_eq!(http(address, &get("/", &here)).await.0, 401);
    assert_eq!(http(address, &get("/?token=wrong", &here)).await.0, 401);
    assert_eq!(http(address, &get("/events", &here)).await.0, 401);
    let (status, page) = http(address, &get(&format!("/?token={token}"), &here)).await;
    assert_eq!(status, 200);
    assert!(page.contains("Questions for you"));
    // DNS rebinding: the right token under a foreign Host name.
    assert_eq!(
        http(
            address,
            &get(
                &format!("/?token={token}"),
                &format!("evil.example:{}", address.port())
            )
        )
        .await
        .0,
        403
    );
    // Names that cannot be rebound pass: localhost, and any IP address (a
    // server bound beyond loopback is reached under its own address); each
    // only with this server's port.
    let port = address.port();
    for (host, status) in [
        (format!("localhost:{port}"), 200),
        (format!("192.0.2.7:{port}"), 200),
        (format!("[::1]:{port}"), 200),
        (format!("127.0.0.1:{}", port.wrapping_add(1)), 403),
        (format!("localhost:{}", port.wrapping_add(1)), 403),
        ("127.0.0.1".to_owned(), 403),
    ] {
        let got = http(address, &get(&format!("/?token={token}"), &host))
            .await
            .0;
        assert_eq!(got, status, "Host: {host}");
    }
    let body = r#"{"eventId":"w1","outcome":{"kind":"next"}}"#;
    assert_eq!(
        http(address, &post(address, "wrong", None, body)).await.0,
        401
    );
    assert_eq!(
        http(
            address,
            &post(address, &token, Some("http://evil.example"), body)
        )
        .await
        .0,
        403
    );
    assert_eq!(
        http(
            address,
            &post(address, &token, Some(&format!("http://{here}")), body)
        )
        .await
        .0,
        409
    );
    assert_eq!(
        http(address, &post(address, &token, None, "{not json"))
            .await
            .0,
        400
    );
    let huge = format!(
        r#"{{"eventId":"{}"}}"#,
        "x".repeat(ask_user::answerers::web::MAX_BODY_BYTES)
    );
    assert_eq!(
        http(address, &post(address, &token, None, &huge)).await.0,
        413
    );
}

#[tokio::test]
async fn with_no_page_open_the_request_passes_on_after_the_grace_period() {
    let h = Harness::new().await;
    let web = WebAnswerer::start(WebConfig {
        grace: Some(Duration::from_millis(100)),
        ..WebConfig::default()
    })
    .await
    .unwrap();
    h.seam().waterfall().register(web, Placement::default());
    let next = h.answerer(Behaviour::ClaimFirst);
    let result = h.call(one_question(&["A"])).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(next.calls(), 1);
}

#[tokio::test]
async fn a_relayed_sub_agents_question_says_which_agent_asks() {
    let h = Harness::with_seam(|seam| seam.with_delegated(Delegated::Relay { max_asks: 3 })).await;
    let s = setup_with(h, WebConfig::default()).await;
    let reviewer = s.h.agents.register_delegate("reviewer", &s.h.root);
    let call = s.call_as(
        &reviewer,
        one_question(&["A", "B"]),
        CancellationToken::new(),
    );
    let text = s.browser.wait_for("form.batch").await.text().await.unwrap();
    assert!(
        text.contains("asked by sub-agent root › reviewer"),
        "{text:?}"
    );
    s.picks_b(call).await;
}

/// A host may name what asks (`ask-user ask --web` gives its folder): the
/// card says it instead of the session's random key.
#[tokio::test]
async fn the_card_names_what_asks_when_the_host_says() {
    let config = WebConfig {
        asker: Some("ask-user in ~/src/app".to_owned()),
        ..WebConfig::default()
    };
    let s = setup_with(Harness::new().await, config).await;
    let call = s.call(one_question(&["A", "B"]), CancellationToken::new());
    let text = s.browser.wait_for("form.batch").await.text().await.unwrap();
    assert!(text.contains("asked by ask-user in ~/src/app"), "{text:?}");
    assert!(!text.contains("asked by root"), "{text:?}");
    s.browser.click(r#"input[data-option="0"]"#).await;
    s.browser.click("button.send").await;
    assert!(!result(call).await.is_error);
    s.browser.close().await;
}
