//! Questions handed to a remote answerer and waiting for its outcome: their
//! ids, the frames that announced them, first-outcome-wins, and withdrawal
//! when the ask ends first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::oneshot;

use super::{Outcome, waterfall};
use crate::error::AskError;
use crate::question::AskRequest;
use crate::sync::lock;
use crate::validate::check_given_answers;
use crate::waterfall::Ask;

/// What an open question ends with: the far side's outcome, or why the far
/// side failed it (a malformed frame, the peer went away).
pub type Resolution = Result<Outcome, String>;

/// What a remote answerer does with a question withdrawn: its id, and how
/// it was settled elsewhere when it was.
pub type OnWithdraw = dyn Fn(&str, Option<&str>) + Send + Sync;

/// The questions one remote answerer has open.
///
/// [`open`](Self::open) gives each ask a fresh event id and its `waterfall`
/// frame, and returns a [`Pending`] ticket. The first [`settle`](Self::settle)
/// for an id wins; a later one is refused with [`NotPending`]. Dropping a
/// ticket before its question was settled withdraws it: the question leaves
/// the list and `on_withdraw` is told its id (to send `cancel`, say), and
/// how it was settled elsewhere when another answerer racing this one did
/// ([`Pending::telling`]).
pub struct PendingQuestions {
    /// What asks, as a page says it (none: the agent's id).
    asker: Option<String>,
    prefix: &'static str,
    next_id: AtomicU64,
    state: Mutex<State>,
    on_withdraw: Box<OnWithdraw>,
}

#[derive(Default)]
struct State {
    /// In the order they were opened.
    open: Vec<Entry>,
    /// Why the far side is gone, once it is: no question opens after that.
    gone: Option<String>,
}

struct Entry {
    id: String,
    frame: Value,
    request: AskRequest,
    reply: oneshot::Sender<Resolution>,
}

/// The far side is gone; the string says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gone(pub String);

/// The question is not open: already settled, or withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotPending;

/// Why [`PendingQuestions::settle_checked`] left a question as it was.
#[derive(Debug)]
pub enum Unsettled {
    /// It is not open (already settled, or withdrawn).
    NotPending,
    /// The answers do not fit its questions (`INVALID_ANSWER`, saying
    /// why); it stays open for a corrected answer.
    Misfit(AskError),
    /// It could not be recorded (its store failed, saying why): nothing
    /// changed, and the same outcome may be sent again.
    Unrecorded(String),
}

impl PendingQuestions {
    /// Event ids are `prefix` followed by a counter (`e1`, `e2`, …).
    pub fn new(
        prefix: &'static str,
        on_withdraw: impl Fn(&str, Option<&str>) + Send + Sync + 'static,
    ) -> Self {
        PendingQuestions {
            asker: None,
            prefix,
            next_id: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            on_withdraw: Box::new(on_withdraw),
        }
    }

    /// Names what asks in every question's frame (`asker`: `ask-user in
    /// ~/src/app`), for a page to say it beside the agent's id.
    pub fn asker(mut self, asker: Option<String>) -> Self {
        self.asker = asker;
        self
    }

    /// Opens `ask` as a new question, unless the far side is gone.
    pub fn open(&self, ask: &Ask) -> Result<Pending<'_>, Gone> {
        let id = format!(
            "{}{}",
            self.prefix,
            self.next_id.fetch_add(1, Ordering::Relaxed)
        );
        let mut frame = waterfall(&id, ask.caller.as_ref().map(|c| c.id()), &ask.request);
        // A relayed sub-agent's chain, for the far side to say who asks.
        if !ask.asked_by.is_empty() {
            frame["askedBy"] = ask.asked_by.clone().into();
        }
        if let Some(asker) = &self.asker {
            frame["asker"] = asker.as_str().into();
        }
        let (reply, settled) = oneshot::channel();
        let mut state = lock(&self.state);
        if let Some(why) = &state.gone {
            return Err(Gone(why.clone()));
        }
        state.open.push(Entry {
            id: id.clone(),
            frame: frame.clone(),
            request: ask.request.clone(),
            reply,
        });
        Ok(Pending {
            questions: self,
            id,
            frame,
            settled,
            open: true,
            elsewhere: None,
        })
    }

    /// Settles question `id`: the first settlement wins.
    pub fn settle(&self, id: &str, settlement: Resolution) -> Result<(), NotPending> {
        let entry = self.take(id).ok_or(NotPending)?;
        // The ticket may be dropping at this very moment: then it is withdrawn.
        entry.reply.send(settlement).map_err(|_| NotPending)
    }

    /// Settles question `id` with `outcome` when its answers fit the
    /// question ([`check_given_answers`]); answers that do not fit leave it open,
    /// so a human can correct them instead of losing the batch. The check
    /// and the settlement are one step: no other outcome comes between.
    pub fn settle_checked(&self, id: &str, outcome: Outcome) -> Result<(), Unsettled> {
        let entry = {
            let mut state = lock(&self.state);
            let at = state
                .open
                .iter()
                .position(|e| e.id == id)
                .ok_or(Unsettled::NotPending)?;
            if let Outcome::Result { value } = &outcome {
                check_given_answers(&state.open[at].request, &value.answers)
                    .map_err(Unsettled::Misfit)?;
            }
            state.open.remove(at)
        };
        entry
            .reply
            .send(Ok(outcome))
            .map_err(|_| Unsettled::NotPending)
    }

    /// The far side is gone: every open question fails with `why`, and no
    /// question opens after this.
    pub fn close(&self, why: impl Into<String>) {
        let why = why.into();
        let mut state = lock(&self.state);
        for entry in state.open.drain(..) {
            let _ = entry.reply.send(Err(why.clone()));
        }
        state.gone = Some(why);
    }

    /// The far side went away (SPEC §5: a client that goes away passes its
    /// events): every open question passes on to the next answerer, as
    /// later ones do, whatever the moment it left. `why` is kept for
    /// [`Gone`].
    pub fn depart(&self, why: impl Into<String>) {
        let mut state = lock(&self.state);
        for entry in state.open.drain(..) {
            let _ = entry.reply.send(Ok(Outcome::Next));
        }
        state.gone.get_or_insert(why.into());
    }

    /// Fails every open question with `why`; later ones may still open.
    pub fn fail_all(&self, why: &str) {
        for entry in lock(&self.state).open.drain(..) {
            let _ = entry.reply.send(Err(why.to_owned()));
        }
    }

    /// The `waterfall` frames of the open questions, oldest first: what a
    /// peer that connects now must be shown.
    pub fn frames(&self) -> Vec<Value> {
        lock(&self.state)
            .open
            .iter()
            .map(|e| e.frame.clone())
            .collect()
    }

    /// How many questions are open.
    pub fn len(&self) -> usize {
        lock(&self.state).open.len()
    }

    /// Whether no question is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn take(&self, id: &str) -> Option<Entry> {
        let mut state = lock(&self.state);
        let at = state.open.iter().position(|e| e.id == id)?;
        Some(state.open.remove(at))
    }
}

/// One open question. Dropping it before it was settled withdraws it.
pub struct Pending<'a> {
    questions: &'a PendingQuestions,
    id: String,
    frame: Value,
    settled: oneshot::Receiver<Resolution>,
    open: bool,
    /// How another answerer racing this one settled it, once it did.
    elsewhere: Option<crate::waterfall::Elsewhere>,
}

impl Pending<'_> {
    /// The event id, as the frames carry it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The `waterfall` frame that announces the question.
    pub fn frame(&self) -> &Value {
        &self.frame
    }

    /// Withdrawn, it says how `elsewhere` settled it, when it did (an
    /// answerer's [`Next::elsewhere`](crate::Next::elsewhere)).
    pub fn telling(mut self, elsewhere: crate::waterfall::Elsewhere) -> Self {
        self.elsewhere = Some(elsewhere);
        self
    }

    /// Waits for the settlement. `None` when the list itself went away.
    pub async fn settled(&mut self) -> Option<Resolution> {
        let settlement = (&mut self.settled).await.ok();
        self.open = false;
        settlement
    }

    /// Withdraws the question now (as dropping it does), e.g. when the
    /// answerer passes it on after all.
    pub fn withdraw(mut self) {
        self.withdraw_now();
    }

    fn withdraw_now(&mut self) {
        if std::mem::take(&mut self.open) && self.questions.take(&self.id).is_some() {
            let how = self.elsewhere.as_ref().and_then(|e| e.get());
            (self.questions.on_withdraw)(&self.id, how);
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.withdraw_now();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::question::{Answer, AskRequest, Question};

    fn ask() -> Ask {
        Ask {
            request: AskRequest {
                questions: vec![Question::new("q", "Which?")],
            },
            caller: None,
            signal: CancellationToken::new(),
            asked_by: Vec::new(),
        }
    }

    fn recorded() -> (PendingQuestions, Arc<Mutex<Vec<String>>>) {
        let withdrawn = Arc::new(Mutex::new(Vec::new()));
        let seen = withdrawn.clone();
        let questions =
            PendingQuestions::new("e", move |id, _| seen.lock().unwrap().push(id.into()));
        (questions, withdrawn)
    }

    #[tokio::test]
    async fn the_first_settlement_wins_and_a_later_one_is_refused() {
        let (questions, withdrawn) = recorded();
        let ask = ask();
        let mut pending = questions.open(&ask).unwrap();
        assert_eq!(pending.id(), "e1");
        assert_eq!(pending.frame()["type"], "waterfall");
        assert_eq!(questions.settle("e1", Ok(Outcome::Next)), Ok(()));
        assert_eq!(questions.settle("e1", Ok(Outcome::Next)), Err(NotPending));
        assert!(matches!(pending.settled().await, Some(Ok(Outcome::Next))));
        drop(pending);
        assert!(
            withdrawn.lock().unwrap().is_empty(),
            "a settled question is not withdrawn"
        );
    }

    #[tokio::test]
    async fn answers_that_do_not_fit_leave_the_question_open_for_a_correction() {
        let (questions, _) = recorded();
        let ask = ask();
        let mut pending = questions.open(&ask).unwrap();
        let answered = |answers: Vec<Answer>| Outcome::Result {
            value: super::super::ResultValue { answers },
        };
        let misfit = answered(vec![Answer::skipped("zz")]);
        match questions.settle_checked("e1", misfit) {
            Err(Unsettled::Misfit(error)) => {
                assert!(error.message().contains("\"zz\""), "{}", error.message())
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(questions.len(), 1, "still open");
        let fits = answered(vec![Answer::skipped("q")]);
        assert!(questions.settle_checked("e1", fits).is_ok());
        assert!(matches!(
            pending.settled().await,
            Some(Ok(Outcome::Result { .. }))
        ));
        let again = answered(vec![Answer::skipped("q")]);
        assert!(matches!(
            questions.settle_checked("e1", again),
            Err(Unsettled::NotPending)
        ));
    }

    #[tokio::test]
    async fn dropping_an_open_question_withdraws_it_once() {
        let (questions, withdrawn) = recorded();
        let ask = ask();
        let first = questions.open(&ask).unwrap();
        let second = questions.open(&ask).unwrap();
        assert_eq!(second.id(), "e2");
        assert_eq!(questions.frames().len(), 2);
        drop(first);
        assert_eq!(*withdrawn.lock().unwrap(), ["e1"]);
        assert_eq!(questions.settle("e1", Ok(Outcome::Next)), Err(NotPending));
        second.withdraw();
        assert_eq!(*withdrawn.lock().unwrap(), ["e1", "e2"]);
        assert!(questions.is_empty());
    }

    #[tokio::test]
    async fn a_closed_list_fails_what_is_open_and_opens_nothing_more() {
        let (questions, withdrawn) = recorded();
        let ask = ask();
        let mut pending = questions.open(&ask).unwrap();
        questions.close("the peer exited");
        assert_eq!(pending.settled().await, Some(Err("the peer exited".into())));
        assert!(matches!(questions.open(&ask), Err(Gone(why)) if why == "the peer exited"));
        drop(pending);
        assert!(withdrawn.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_departed_far_side_passes_what_is_open_and_opens_nothing_more() {
        let (questions, _) = recorded();
        let ask = ask();
        let mut pending = questions.open(&ask).unwrap();
        questions.depart("the peer exited");
        assert!(matches!(pending.settled().await, Some(Ok(Outcome::Next))));
        assert!(matches!(questions.open(&ask), Err(Gone(why)) if why == "the peer exited"));
    }

    #[tokio::test]
    async fn failing_all_leaves_the_list_open_for_new_questions() {
        let (questions, _) = recorded();
        let ask = ask();
        let mut pending = questions.open(&ask).unwrap();
        questions.fail_all("a malformed frame");
        assert_eq!(
            pending.settled().await,
            Some(Err("a malformed frame".into()))
        );
        assert!(questions.open(&ask).is_ok());
    }
}
