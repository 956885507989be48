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
    /// Its agent's requests waiting for it now: what keeps it from expiring.
    present: usize,
    /// Every request waiting for it now (its agent's, and people's).
    watchers: usize,
    wake: watch::Sender<()>,
}

/// What a waiter watches: its question's wake-ups, and everyone's.
pub struct Watch {
    pub mine: watch::Receiver<()>,
    pub all: watch::Receiver<u64>,
}

impl Waiters {
    /// One more request of its agent waits for `id`; what it watches from
    /// now on. Until [`detach`](Self::detach), `id` is attached.
    pub fn attach(&self, id: &str) -> Watch {
        self.add(id, 1)
    }

    /// One more request (a person's) waits for `id` without attaching it;
    /// until [`unwatch`](Self::unwatch).
    pub fn watch(&self, id: &str) -> Watch {
        self.add(id, 0)
    }

    fn add(&self, id: &str, present: usize) -> Watch {
        let mut map = self.map();
        let entry = map.entry(id.to_owned()).or_insert_with(|| Entry {
            present: 0,
            watchers: 0,
            wake: watch::channel(()).0,
        });
        entry.present += present;
        entry.watchers += 1;
        Watch {
            mine: entry.wake.subscribe(),
            all: self.all.subscribe(),
        }
    }

    /// A request of its agent stopped waiting for `id`.
    pub fn detach(&self, id: &str) {
        self.remove(id, 1);
    }

    /// A request that [`watch`](Self::watch)ed `id` stopped waiting.
    pub fn unwatch(&self, id: &str) {
        self.remove(id, 0);
    }

    fn remove(&self, id: &str, present: usize) {
        let mut map = self.map();
        if let Some(entry) = map.get_mut(id) {
            entry.present -= present;
            entry.watchers -= 1;
            if entry.watchers == 0 {
                map.remove(id);
            }
        }
    }

    /// Whether a request of its agent waits for `id` now.
    pub fn is_attached(&self, id: &str) -> bool {
        self.map().get(id).is_some_and(|entry| entry.present > 0)
    }

    /// The questions a request of their agent waits for now.
    pub fn attached(&self) -> Vec<String> {
        self.map()
            .iter()
            .filter(|(_, entry)| entry.present > 0)
            .map(|(id, _)| id.clone())
            .collect()
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

    #[tokio::test]
    async fn a_persons_wait_is_woken_but_attaches_nothing() {
        let waiters = Waiters::default();
        let person = waiters.watch("q1");
        assert!(!waiters.is_attached("q1") && waiters.attached().is_empty());
        let _agent = waiters.attach("q1");
        assert_eq!(waiters.attached(), ["q1"]);
        waiters.detach("q1");
        assert!(!waiters.is_attached("q1"), "only the person is left");
        waiters.wake("q1");
        assert!(person.mine.has_changed().unwrap(), "still woken");
        waiters.unwatch("q1");
        assert!(waiters.map().is_empty());
    }
}
