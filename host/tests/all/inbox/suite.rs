//! What every chat channel does alike, run against each (as the store's
//! behaviour suite runs against each engine): a choice answered and a
//! stranger refused; a batch of several choices, own words and a skip,
//! sent once complete; a question answered elsewhere first, and an answer
//! too late; a restart in the middle of a batch that loses no answer and
//! posts nothing twice. A channel's own file
//! implements [`Service`] for its service (a fake of ours, or a real
//! homeserver) and names the suite ([`suite!`]); what only it does (its
//! markup, its buttons, its limits, its service down or throttled) stays
//! in its own tests.
//!
//! ntfy's buttons are not a chat (no own words, no several choices, no
//! reply to whoever pressed): its own tests cover what it takes.

use serde_json::json;

use super::{Inbox, answers_of, choice};

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
