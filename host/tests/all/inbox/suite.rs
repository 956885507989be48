//! What every chat channel does alike, run against each (as the store's
//! behaviour suite runs against each engine): a choice answered and a
//! stranger refused; a batch of several choices, own words and a skip,
//! sent once complete; a question answered elsewhere first, and an answer
//! too late; a restart in the middle of a batch that loses no answer and
//! posts nothing twice; the service down and then busy (a 429), waited
//! out; a question the service refuses to show, passed over for the next.
//! A channel's own file implements [`Service`] for its service (a fake of
//! ours, or a real homeserver behind a [`FaultProxy`] that fails on cue)
//! and names the suite ([`suite!`]); what only it does (its markup, its
//! buttons, its limits, its own form of a 429) stays in its own tests.
//!
//! [`FaultProxy`]: ask_user_test_support::fault_proxy::FaultProxy
//!
//! ntfy's buttons are not a chat (no own words, no several choices, no
//! reply to whoever pressed): its own tests cover what it takes.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Inbox, answers_of, choice};

/// The longest anything of a service is waited for.
const BOUND: Duration = Duration::from_secs(60);

/// A call the channel made to its service.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    pub(crate) at: Instant,
    /// Whether it posted a question's message.
    pub(crate) post: bool,
    /// The HTTP status it got (0 while it waits: a long poll).
    pub(crate) status: u16,
}

/// Who acts in the service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Who {
    /// A person the channel's `allow` lists.
    Allowed,
    /// Someone in the chat it does not.
    Stranger,
}

/// A chat service, as its people use it.
pub(crate) trait Service: Sized {
    /// The channel's name, as the inbox says where a question was answered
    /// ("Answered in Telegram").
    const TITLE: &'static str;
    /// A question as the service shows it.
    type Shown;
    /// What a person did, to find what they were told about it.
    type Act;

    /// The service, and a one-user inbox whose questions go to it (with
    /// what must live as long: its secrets' folder).
    fn start() -> (Self, Inbox, tempfile::TempDir);

    /// The question whose text has `text`, once it is shown.
    fn shown(&self, text: &str) -> Self::Shown;

    /// `who` chooses `labels` of `shown`: one, for a question of one
    /// choice; any number, for one of several.
    fn choose(&self, who: Who, shown: &Self::Shown, labels: &[&str]) -> Self::Act;

    /// `who` answers `shown` in their own words.
    fn own_words(&self, who: Who, shown: &Self::Shown, text: &str) -> Self::Act;

    /// `who` skips `shown`.
    fn skip(&self, who: Who, shown: &Self::Shown) -> Self::Act;

    /// Waits until whoever did `act` is told something with `text`.
    fn told(&self, act: &Self::Act, text: &str);

    /// Waits until `shown` says `text` where it is shown.
    fn says(&self, shown: &Self::Shown, text: &str);

    /// Waits until `shown` says `text`, with nothing left to press.
    fn settled(&self, shown: &Self::Shown, text: &str);

    /// How many questions' messages were posted.
    fn posts(&self) -> usize;

    /// Every call fails (502) while `down`.
    fn set_down(&self, down: bool);

    /// The next post of a question is answered 429, saying to wait
    /// `seconds`, in the service's own words.
    fn throttle_next_post(&self, seconds: u64);

    /// Every post of a question with `text` in it is refused, as the
    /// service refuses what it will not show.
    fn refuse_posts_with(&self, text: &str);

    /// The calls so far.
    fn calls(&self) -> Vec<Call>;

    /// Waits until a call `holds`.
    fn wait_for_call(&self, what: &str, holds: impl Fn(&Call) -> bool) {
        let start = Instant::now();
        while !self.calls().iter().any(&holds) {
            assert!(start.elapsed() < BOUND, "waited {BOUND:?} for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The suite's tests for `$service`, in the module it is named in.
macro_rules! suite {
    ($service:ty) => {
        mod behaviour {
            use crate::inbox::suite;

            #[test]
            fn a_choice_is_answered_and_a_stranger_is_refused() {
                suite::a_choice_is_answered_and_a_stranger_is_refused::<$service>();
            }

            #[test]
            fn a_batch_takes_several_choices_own_words_and_a_skip_once_complete() {
                suite::a_batch_takes_several_choices_own_words_and_a_skip_once_complete::<$service>();
            }

            #[test]
            fn answered_elsewhere_first_the_question_says_so_and_a_late_answer_counts_for_nothing() {
                suite::answered_elsewhere_first_the_question_says_so_and_a_late_answer_counts_for_nothing::<$service>();
            }

            #[test]
            fn a_restart_in_the_middle_of_a_batch_loses_no_answer_and_posts_nothing_twice() {
                suite::a_restart_in_the_middle_of_a_batch_loses_no_answer_and_posts_nothing_twice::<$service>();
            }

            #[test]
            fn the_service_down_and_then_busy_is_waited_out() {
                suite::the_service_down_and_then_busy_is_waited_out::<$service>();
            }

            #[test]
            fn a_question_the_service_refuses_is_passed_over_and_the_next_is_answered() {
                suite::a_question_the_service_refuses_is_passed_over_and_the_next_is_answered::<$service>();
            }
        }
    };
}
pub(crate) use suite;

pub(crate) fn a_choice_is_answered_and_a_stranger_is_refused<S: Service>() {
    let (service, inbox, _secrets) = S::start();
    let agent = inbox.agent(
        "s1",
        &choice("Deploy now?", &["staging", "production"]),
        &[],
    );
    let shown = service.shown("Deploy now?");
    let refused = service.choose(Who::Stranger, &shown, &["production"]);
    service.told(&refused, "not in this inbox's allow list");
    assert_eq!(inbox.list(false).len(), 1, "the question still waits");
    service.choose(Who::Allowed, &shown, &["production"]);
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["production"]}])
    );
    service.settled(&shown, &format!("Answered in {}", S::TITLE));
    let listed = inbox.wait_for("the question answered", true, |q| q["state"] == "answered");
    assert_eq!(listed["settledBy"], S::TITLE.to_lowercase());
}

pub(crate) fn a_batch_takes_several_choices_own_words_and_a_skip_once_complete<S: Service>() {
    let (service, inbox, _secrets) = S::start();
    let batch = json!({"questions": [
        {"id": "parts", "question": "What goes in?", "multiSelect": true, "options": [
            {"label": "Tests"}, {"label": "Docs"}, {"label": "Bench"}]},
        {"id": "notes", "question": "Anything else?"},
        {"id": "when", "question": "When?", "options": [{"label": "Now"}, {"label": "Later"}]},
    ]});
    let agent = inbox.agent("s2", &batch, &[]);
    let parts = service.shown("What goes in?");
    let notes = service.shown("Anything else?");
    let when = service.shown("When?");
    let picked = service.choose(Who::Allowed, &parts, &["Tests", "Bench"]);
    service.told(&picked, "Noted; 2 more to answer before it is sent.");
    service.says(&parts, "Tests, Bench");
    let words = service.own_words(Who::Allowed, &notes, "ship it <now>");
    service.told(&words, "Noted; 1 more to answer before it is sent.");
    assert_eq!(
        inbox.list(false).len(),
        1,
        "nothing is sent before the last"
    );
    service.skip(Who::Allowed, &when);
    assert_eq!(
        answers_of(&agent.finish()),
        json!([
            {"id": "parts", "selected": ["Tests", "Bench"]},
            {"id": "notes", "selected": [], "custom": "ship it <now>"},
            {"id": "when", "selected": []},
        ])
    );
    service.says(&when, "skipped");
}

pub(crate) fn answered_elsewhere_first_the_question_says_so_and_a_late_answer_counts_for_nothing<
    S: Service,
>() {
    let (service, inbox, _secrets) = S::start();
    let agent = inbox.agent("s3", &choice("Merge it?", &["Yes", "No"]), &[]);
    let shown = service.shown("Merge it?");
    let waiting = inbox.wait_for("the question", false, |_| true);
    let answered = inbox.answer(
        waiting["id"].as_str().unwrap(),
        &json!({"answers": [{"id": "q", "selected": ["No"]}]}),
    );
    assert!(answered.status.success(), "{}", super::stderr(&answered));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["No"]}])
    );
    service.settled(&shown, "Answered from the command line");
    let late = service.choose(Who::Allowed, &shown, &["Yes"]);
    service.told(&late, "no longer waiting");
    let listed = inbox.wait_for("the question answered", true, |q| q["state"] == "answered");
    assert_eq!(listed["settledBy"], "command");
}

pub(crate) fn a_restart_in_the_middle_of_a_batch_loses_no_answer_and_posts_nothing_twice<
    S: Service,
>() {
    let (service, mut inbox, _secrets) = S::start();
    let batch = json!({"questions": [
        {"id": "a", "question": "First?", "options": [{"label": "A1"}, {"label": "A2"}]},
        {"id": "b", "question": "Second?", "options": [{"label": "B1"}, {"label": "B2"}]},
    ]});
    let agent = inbox.agent("s4", &batch, &[]);
    let first = service.shown("First?");
    let second = service.shown("Second?");
    let chosen = service.choose(Who::Allowed, &first, &["A2"]);
    service.told(&chosen, "Noted; 1 more to answer before it is sent.");
    inbox.kill9();
    // Answered while the inbox is down: the service keeps it.
    service.choose(Who::Allowed, &second, &["B1"]);
    inbox.serve();
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "a", "selected": ["A2"]}, {"id": "b", "selected": ["B1"]}])
    );
    service.settled(&second, &format!("Answered in {}", S::TITLE));
    assert_eq!(service.posts(), 2, "each question posted once");
}

pub(crate) fn the_service_down_and_then_busy_is_waited_out<S: Service>() {
    let (service, inbox, _secrets) = S::start();
    service.set_down(true);
    // The inbox takes the question without its channel.
    let agent = inbox.agent("s5", &choice("Still there?", &["Yes", "No"]), &[]);
    inbox.wait_for("the question", false, |_| true);
    service.wait_for_call("a call that failed", |call| call.status >= 500);
    service.throttle_next_post(1);
    service.set_down(false);
    let shown = service.shown("Still there?");
    let posts: Vec<Call> = service.calls().into_iter().filter(|c| c.post).collect();
    let busy = posts
        .iter()
        .position(|call| call.status == 429)
        .unwrap_or_else(|| panic!("a post was answered 429: {posts:#?}"));
    let again = posts[busy + 1];
    assert_eq!(again.status, 200, "{posts:#?}");
    assert!(
        again.at >= posts[busy].at + Duration::from_secs(1),
        "posted again once the wait the 429 asked (1 s) was over: {posts:#?}"
    );
    service.choose(Who::Allowed, &shown, &["Yes"]);
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
    assert_eq!(service.posts(), 1, "posted once");
}

pub(crate) fn a_question_the_service_refuses_is_passed_over_and_the_next_is_answered<S: Service>() {
    let (service, inbox, _secrets) = S::start();
    service.refuse_posts_with("Ring the bell?");
    let _refused = inbox.agent("s6", &choice("Ring the bell?", &["Yes", "No"]), &[]);
    inbox.said("the service refused to show a question");
    let agent = inbox.agent("s7", &choice("Deploy?", &["staging", "production"]), &[]);
    let shown = service.shown("Deploy?");
    service.choose(Who::Allowed, &shown, &["production"]);
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["production"]}])
    );
    let waiting = inbox.list(false);
    assert!(
        waiting
            .iter()
            .any(|q| q["questions"][0]["question"] == "Ring the bell?"),
        "the refused question still waits for the page: {waiting:?}"
    );
    let posts = service.calls().into_iter().filter(|c| c.post).count();
    assert_eq!(posts, 2, "the refused question was not tried again");
}
