//! Who a token is, without a database round trip on every request: a
//! team's server keeps the identities of the tokens it has checked, by
//! their digest, while it hears its store's announcements, and forgets
//! them all when a token is revoked anywhere. A server that is not
//! listening (at its start, or after losing its listening connection)
//! serves nothing from memory: a revocation it could not hear would
//! otherwise go unseen; once it listens again, it starts afresh. A
//! connection that dies silently is known lost only when the store's probe
//! finds it (15–20 s on PostgreSQL): until then, a revocation may go
//! unheard here.
//!
//! Only tokens found are kept: an unknown token is looked up each time
//! (a new token needs no announcement). Page sessions are looked up each
//! time too (a person signs out on one server, and pages are few).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::team::{Heard, Identity, Role, TokenRow, Tokens};
use super::{Millis, StoreFuture};

/// The most identities kept; past it, the cache starts again (a team has
/// far fewer tokens).
const MAX_ENTRIES: usize = 100_000;

/// A [`Tokens`] store with the identities it found kept in memory.
pub struct TokenCache {
    store: Arc<dyn Tokens>,
    state: Mutex<State>,
}

struct State {
    /// Whether the store's announcements are heard now: entries are served
    /// only then.
    listening: bool,
    /// Moves on whenever entries are forgotten: a lookup that began before
    /// is not kept (it may have read a token since revoked).
    generation: u64,
    /// Identities by their token's digest.
    entries: HashMap<String, Identity>,
}

impl TokenCache {
    /// A cache of `store`'s identities; not listening until told so.
    pub fn new(store: Arc<dyn Tokens>) -> Self {
        TokenCache {
            store,
            state: Mutex::new(State {
                listening: false,
                generation: 0,
                entries: HashMap::new(),
            }),
        }
    }

    /// Hears what the store announced: a revocation forgets every entry;
    /// a lost listening connection forgets them and serves none until it
    /// listens again.
    pub fn heard(&self, heard: Heard) {
        let mut state = self.state.lock().expect("the token cache's lock");
        match heard {
            Heard::Question(_) => return,
            Heard::Revoked => {}
            Heard::Lost => state.listening = false,
            Heard::Listening => state.listening = true,
        }
        state.generation += 1;
        state.entries.clear();
    }
}

impl Tokens for TokenCache {
    fn create_token<'a>(
        &'a self,
        name: &'a str,
        role: Role,
        groups: &'a [String],
        now: Millis,
    ) -> StoreFuture<'a, String> {
        self.store.create_token(name, role, groups, now)
    }

    fn tokens(&self) -> StoreFuture<'_, Vec<TokenRow>> {
        self.store.tokens()
    }

    fn revoke<'a>(&'a self, name: &'a str, now: Millis) -> StoreFuture<'a, bool> {
        self.store.revoke(name, now)
    }

    fn identify<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Identity>> {
        Box::pin(async move {
            let key = crate::digest(token);
            let generation = {
                let state = self.state.lock().expect("the token cache's lock");
                if state.listening
                    && let Some(identity) = state.entries.get(&key)
                {
                    return Ok(Some(identity.clone()));
                }
                state.generation
            };
            let found = self.store.identify(token).await?;
            if let Some(identity) = &found {
                let mut state = self.state.lock().expect("the token cache's lock");
                if state.listening && state.generation == generation {
                    if state.entries.len() >= MAX_ENTRIES {
                        state.entries.clear();
                    }
                    state.entries.insert(key, identity.clone());
                }
            }
            Ok(found)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::Notify;

    /// Tokens in memory, counting lookups; a lookup waits for `release`
    /// when `hold` is set.
    #[derive(Default)]
    struct Counted {
        revoked: Mutex<bool>,
        lookups: AtomicUsize,
        hold: std::sync::atomic::AtomicBool,
        release: Notify,
    }

    impl Tokens for Counted {
        fn create_token<'a>(
            &'a self,
            _: &'a str,
            _: Role,
            _: &'a [String],
            _: Millis,
        ) -> StoreFuture<'a, String> {
            Box::pin(async { Err(StoreError::Unavailable("not here".into())) })
        }
        fn tokens(&self) -> StoreFuture<'_, Vec<TokenRow>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn revoke<'a>(&'a self, _: &'a str, _: Millis) -> StoreFuture<'a, bool> {
            Box::pin(async move {
                *self.revoked.lock().unwrap() = true;
                Ok(true)
            })
        }
        fn identify<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Identity>> {
            Box::pin(async move {
                self.lookups.fetch_add(1, Ordering::SeqCst);
                // Read before waiting: what a lookup in flight saw.
                let found = token == "askusr_bob" && !*self.revoked.lock().unwrap();
                if self.hold.load(Ordering::SeqCst) {
                    self.release.notified().await;
                }
                Ok(found.then(|| Identity {
                    name: "bob".into(),
                    role: Role::Person,
                    groups: vec![],
                }))
            })
        }
    }

    fn cache() -> (Arc<Counted>, TokenCache) {
        let store = Arc::new(Counted::default());
        (store.clone(), TokenCache::new(store))
    }

    async fn bob(cache: &TokenCache) -> Option<String> {
        cache
            .identify("askusr_bob")
            .await
            .unwrap()
            .map(|identity| identity.name)
    }

    #[tokio::test]
    async fn while_listening_a_token_is_looked_up_once_and_a_revocation_is_seen_at_once() {
        let (store, cache) = cache();
        cache.heard(Heard::Listening);
        for _ in 0..3 {
            assert_eq!(bob(&cache).await.as_deref(), Some("bob"));
        }
        assert_eq!(
            store.lookups.load(Ordering::SeqCst),
            1,
            "one lookup, then memory"
        );
        cache.heard(Heard::Question("q1"));
        assert_eq!(bob(&cache).await.as_deref(), Some("bob"));
        assert_eq!(
            store.lookups.load(Ordering::SeqCst),
            1,
            "a question changes no identity"
        );

        store.revoke("bob", 0).await.unwrap();
        cache.heard(Heard::Revoked);
        assert_eq!(bob(&cache).await, None, "revoked, read again");
        assert!(cache.identify("askusr_eve").await.unwrap().is_none());
        assert!(cache.identify("askusr_eve").await.unwrap().is_none());
        assert_eq!(
            store.lookups.load(Ordering::SeqCst),
            4,
            "an unknown token is looked up each time"
        );
    }

    #[tokio::test]
    async fn not_listening_nothing_is_served_from_memory() {
        let (store, cache) = cache();
        // Before the first Listening: every request goes to the store.
        bob(&cache).await;
        bob(&cache).await;
        assert_eq!(store.lookups.load(Ordering::SeqCst), 2);
        cache.heard(Heard::Listening);
        bob(&cache).await;
        cache.heard(Heard::Lost);
        // A revocation now would go unheard: the store answers every time.
        store.revoke("bob", 0).await.unwrap();
        assert_eq!(bob(&cache).await, None);
        assert_eq!(store.lookups.load(Ordering::SeqCst), 4);
        cache.heard(Heard::Listening);
        assert_eq!(
            bob(&cache).await,
            None,
            "listening again, nothing old is served"
        );
    }

    #[tokio::test]
    async fn a_lookup_that_began_before_a_revocation_is_not_kept() {
        let (store, cache) = cache();
        cache.heard(Heard::Listening);
        store.hold.store(true, Ordering::SeqCst);
        let cache = Arc::new(cache);
        let in_flight = tokio::spawn({
            let cache = cache.clone();
            async move { bob(&cache).await }
        });
        while store.lookups.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // The lookup read bob as valid; bob is revoked before it returns.
        store.revoke("bob", 0).await.unwrap();
        cache.heard(Heard::Revoked);
        store.hold.store(false, Ordering::SeqCst);
        store.release.notify_one();
        assert_eq!(
            in_flight.await.unwrap().as_deref(),
            Some("bob"),
            "what it read"
        );
        assert_eq!(bob(&cache).await, None, "but it was not kept");
    }
}
