//! One batch at a time per root: when a root and its relayed sub-agents ask
//! at once, the human sees their batches one after another, the root's own
//! first, then the sub-agents' in the order they asked.
//!
//! An ask takes its root's floor before it reaches the answerers and holds
//! it until it ends; one that is withdrawn while it waits (cancelled, timed
//! out) leaves the queue. The floor passes on as a value ([`Turn`]), so a
//! turn handed to an ask that is withdrawn at that moment is dropped with
//! it, and passes on again: it is never lost.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::agents::AgentHandle;
use crate::sync::lock;

/// The floors of every root with an ask under way.
#[derive(Debug, Default)]
pub struct Floors {
    by_root: Arc<Mutex<HashMap<AgentHandle, Queue>>>,
}

/// A root's floor, held: who waits for it.
#[derive(Debug, Default)]
struct Queue {
    /// The root's own asks first, then its sub-agents', each in order.
    own: Vec<oneshot::Sender<Turn>>,
    delegates: Vec<oneshot::Sender<Turn>>,
}

/// The floor of one root, held by one ask until dropped.
#[derive(Debug)]
pub struct Turn {
    root: AgentHandle,
    floors: Arc<Mutex<HashMap<AgentHandle, Queue>>>,
}

impl Floors {
    /// Waits for `root`'s floor; `own`: the root's own ask (goes before
    /// its sub-agents'). Dropping the future leaves the queue.
    pub async fn take(&self, root: &AgentHandle, own: bool) -> Turn {
        let waiting = {
            let mut floors = lock(&self.by_root);
            match floors.get_mut(root) {
                None => {
                    floors.insert(root.clone(), Queue::default());
                    None
                }
                Some(queue) => {
                    let (give, wait) = oneshot::channel();
                    match own {
                        true => queue.own.push(give),
                        false => queue.delegates.push(give),
                    }
                    Some(wait)
                }
            }
        };
        match waiting {
            None => Turn {
                root: root.clone(),
                floors: self.by_root.clone(),
            },
            // The floor is never dropped without being passed on or freed,
            // so the sender is used before it goes.
            Some(wait) => wait.await.expect("a floor is passed on or freed"),
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut floors = lock(&self.floors);
        let Some(queue) = floors.get_mut(&self.root) else {
            return;
        };
        let mut turn = Turn {
            root: self.root.clone(),
            floors: self.floors.clone(),
        };
        while let Some(next) = next_waiter(queue) {
            match next.send(turn) {
                Ok(()) => return,
                // That ask was withdrawn while it waited: the next one.
                Err(back) => turn = back,
            }
        }
        floors.remove(&self.root);
        // `turn`, a copy, finds no queue when dropped now.
        drop(floors);
    }
}

fn next_waiter(queue: &mut Queue) -> Option<oneshot::Sender<Turn>> {
    for waiting in [&mut queue.own, &mut queue.delegates] {
        if !waiting.is_empty() {
            return Some(waiting.remove(0));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::AgentRegistry;
    use std::time::Duration;

    #[tokio::test]
    async fn the_roots_own_ask_goes_first_then_its_sub_agents_in_order() {
        let agents = AgentRegistry::new();
        let root = agents.register_root("session-1", None);
        let floors = Arc::new(Floors::default());
        let first = floors.take(&root, false).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for (name, own) in [("reviewer", false), ("tester", false), ("root", true)] {
            let (mine, handle, order) = (floors.clone(), root.clone(), order.clone());
            waiting.push(tokio::spawn(async move {
                let _turn = mine.take(&handle, own).await;
                lock(&order).push(name);
            }));
            // Each is queued before the next comes.
            while queued(&floors, &root) < waiting.len() {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        for waiter in waiting {
            waiter.await.unwrap();
        }
        assert_eq!(*lock(&order), ["root", "reviewer", "tester"]);
        assert!(
            lock(&floors.by_root).is_empty(),
            "a free floor is forgotten"
        );
    }

    #[tokio::test]
    async fn an_ask_withdrawn_while_it_waits_never_holds_the_floor() {
        let agents = AgentRegistry::new();
        let root = agents.register_root("session-1", None);
        let floors = Floors::default();
        let first = floors.take(&root, true).await;
        // Withdrawn while waiting: it leaves nothing behind.
        let gone = tokio::time::timeout(Duration::from_millis(1), floors.take(&root, false)).await;
        assert!(gone.is_err());
        drop(first);
        let again = tokio::time::timeout(Duration::from_secs(5), floors.take(&root, false)).await;
        assert!(again.is_ok(), "the floor was passed over the withdrawn ask");
        // Another root's floor is its own.
        let other = agents.register_root("session-2", None);
        let _theirs = tokio::time::timeout(Duration::from_secs(5), floors.take(&other, true))
            .await
            .expect("not held by session-1's ask");
    }

    fn queued(floors: &Floors, root: &AgentHandle) -> usize {
        lock(&floors.by_root)
            .get(root)
            .map_or(0, |queue| queue.own.len() + queue.delegates.len())
    }
}
