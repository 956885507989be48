//! Waiting without an instance: a call whose ask must wait for the human
//! ends its run there, and is run again from the start once the answer is
//! in, the answer handed over at the same ask (the tool is deterministic:
//! the same arguments and the same answers give the same result).
//!
//! A run of a call in [`Replay`] mode meets its asks in order: an ask the
//! log holds gets its stored answer at once (provided the component asks
//! exactly what it asked before); a new ask goes to the seam, and is
//! answered on the spot when the seam answers at once (a script, a rule, a
//! stored answer). Otherwise the run ends with [`Suspended`], and the
//! caller takes the [`PendingAnswer`] out of the store, drops the instance,
//! awaits the answer holding nothing of the component, and runs the call
//! again with the answer added to the log.

use std::future::Future;
use std::pin::Pin;

use ask_user_seam::{Answer, AskError, AskRequest};

/// What the seam gave one ask.
pub type Answered = Result<Vec<Answer>, AskError>;

/// An ask of an earlier run and what it got.
#[derive(Debug, Clone)]
pub struct EarlierAsk {
    pub request: AskRequest,
    pub answered: Answered,
}

/// The asks of the earlier runs of one call, in order.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    pub(crate) asked: Vec<EarlierAsk>,
}

impl Replay {
    /// No ask yet: the first run of a call.
    pub fn new() -> Self {
        Self::default()
    }

    /// The asks recorded so far.
    pub fn asked(&self) -> &[EarlierAsk] {
        &self.asked
    }

    /// Records what the ask of `request` got, for the next run.
    pub fn record(&mut self, request: AskRequest, answered: Answered) {
        self.asked.push(EarlierAsk { request, answered });
    }
}

/// The answer to an ask, under way in the seam, and the request it
/// answers; it holds the answerers' state and nothing of the component.
pub type PendingAnswer = Pin<Box<dyn Future<Output = (AskRequest, Answered)> + Send>>;

/// The error that ends a run at an ask that must wait (a trap of the
/// instance, which is then dropped). It is never a result: the caller
/// waits for the answer and runs the call again.
#[derive(Debug)]
pub struct Suspended;

impl std::fmt::Display for Suspended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the call waits for the human: this run ended at its ask, and the call runs again \
             with the answer"
        )
    }
}

impl std::error::Error for Suspended {}
