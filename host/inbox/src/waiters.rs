//! The agents waiting for their questions, per question: which questions
//! have an agent waiting now (those never expire), and how to wake exactly
//! the waiters of one question when it leaves the waiting state, or every
//! waiter when a wake-up may have been lost (a team's listening connection
//! was made again).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

/// Every waiter, by question.
#[derive(Default)]
pub struct Waiters {
    by_question: Mutex<HashMap<String, Entry>>,
    /// Moves on to wake every waiter.
    all: watch::Sender<u64>,
}

struct Entry {
    /// Requests waiting for it now.
    count: usize,
    wake: watch::Sender<()>,
}

/// What a waiter watches: its question's wake-ups, and everyone's.
pub struct Watch {
    pub mine: watch::Receiver<()>,
    pub all: watch::Receiver<u64>,
}

impl Waiters {
    /// One more request waits for `id`; what it watches from now on.
    pub fn attach(&self, id: &str) -> Watch {
        let mut map = self.map();
        let entry = map.entry(id.to_owned()).or_insert_with(|| Entry {
            count: 0,
            wake: watch::channel(()).0,
        });
        entry.count += 1;
        Watch {
            mine: entry.wake.subscribe(),
            all: self.all.subscribe(),
        }
    }

    /// A request stopped waiting for `id`.
    pub fn detach(&self, id: &str) {
        let mut map = self.map();
        if let Some(entry) = map.get_mut(id) {
            entry.count -= 1;
            if entry.count == 0 {
                map.remove(id);
            }
        }
    }

    /// Whether a request waits for `id` now.
    pub fn is_attached(&self, id: &str) -> bool {
        self.map().contains_key(id)
    }

    /// The questions a request waits for now.
    pub fn attached(&self) -> Vec<String> {
        self.map().keys().cloned().collect()
    }

    /// Wakes the waiters of `id`, which read it again.
    pub fn wake(&self, id: &str) {
        if let Some(entry) = self.map().get(id) {
            entry.wake.send_replace(());
        }
    }

    /// Wakes every waiter.
    pub fn wake_all(&self) {
        self.all.send_modify(|n| *n += 1);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.by_question
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wake_reaches_the_waiters_of_its_question_only() {
        let waiters = Waiters::default();
        let mut first = waiters.attach("q1");
        let mut other = waiters.attach("q2");
        waiters.wake("q1");
        assert!(first.mine.has_changed().unwrap());
        assert!(!other.mine.has_changed().unwrap());
        waiters.wake_all();
        assert!(other.all.has_changed().unwrap());
        first.mine.mark_unchanged();
        assert_eq!(waiters.attached().len(), 2);
        waiters.detach("q1");
        assert!(!waiters.is_attached("q1") && waiters.is_attached("q2"));
        // A question nobody waits for: nothing to wake.
        waiters.wake("q1");
        other.all.mark_unchanged();
    }
}
