//! Each call's agent id: what an inbox question is filed under, so what
//! lets a call asked again after a restart find its question (and an answer
//! given meanwhile).
//!
//! The id is `mcp-call-` and 128 bits of HMAC-SHA-256, keyed by a secret of
//! the server, of the call's arguments: a server with the same secret (one
//! restarted with the same bearer token) gives the same call the same id,
//! and a server with another secret (any other process: a per-run token is
//! random) never does. A call whose id is in use by a call under way in
//! this process (the same arguments, asked twice at once) gets a random id:
//! two live calls never share an agent.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// What every call id starts with.
const PREFIX: &str = "mcp-call-";

/// Makes call ids from one secret; clones share the ids in use.
#[derive(Clone)]
pub(crate) struct CallIds {
    key: [u8; 32],
    in_use: Arc<Mutex<HashSet<String>>>,
}

impl CallIds {
    /// Ids keyed by `secret` (e.g. the server's bearer token).
    pub fn keyed(secret: &[u8]) -> Self {
        let mut key = Sha256::new();
        key.update(b"ask-user mcp call ids\0");
        key.update(secret);
        CallIds {
            key: key.finalize().into(),
            in_use: Arc::default(),
        }
    }

    /// Ids of a random key: no call of another process ever has one.
    pub fn random() -> std::io::Result<Self> {
        Ok(Self::keyed(&ask_user_answerers::secret::random::<32>()?))
    }

    /// The id of a call of `arguments`, in use until the [`CallId`] drops.
    pub fn of(&self, arguments: &str) -> std::io::Result<CallId> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        mac.update(arguments.as_bytes());
        let digest = mac.finalize().into_bytes();
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let derived = format!("{PREFIX}{hex}");
        let taken = self
            .in_use
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(derived.clone());
        Ok(match taken {
            true => CallId {
                id: derived,
                in_use: Some(self.in_use.clone()),
            },
            false => CallId {
                id: ask_user_answerers::secret::id(PREFIX)?,
                in_use: None,
            },
        })
    }
}

/// A call's id, while the call is under way.
pub(crate) struct CallId {
    id: String,
    /// Where it is marked in use (a derived id).
    in_use: Option<Arc<Mutex<HashSet<String>>>>,
}

impl CallId {
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for CallId {
    fn drop(&mut self) {
        if let Some(in_use) = &self.in_use {
            in_use
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_call_under_the_same_secret_has_the_same_id_and_no_other_does() {
        let a = CallIds::keyed(b"token-one");
        let restarted = CallIds::keyed(b"token-one");
        let other = CallIds::keyed(b"token-two");
        let id = a.of(r#"{"questions":[]}"#).unwrap().id().to_owned();
        assert!(
            id.starts_with(PREFIX) && id.len() == PREFIX.len() + 32,
            "{id}"
        );
        assert_eq!(restarted.of(r#"{"questions":[]}"#).unwrap().id().to_owned(), id);
        assert_ne!(other.of(r#"{"questions":[]}"#).unwrap().id().to_owned(), id);
        assert_ne!(a.of(r#"{"questions":[1]}"#).unwrap().id().to_owned(), id);
    }

    #[test]
    fn the_same_call_twice_at_once_gets_a_random_id_the_second_time() {
        let ids = CallIds::keyed(b"token");
        let first = ids.of("{}").unwrap();
        let second = ids.of("{}").unwrap();
        assert_ne!(first.id(), second.id());
        assert!(second.id().starts_with(PREFIX) && second.id().len() == first.id().len());
        let derived = first.id().to_owned();
        drop((first, second));
        assert_eq!(
            ids.of("{}").unwrap().id().to_owned(),
            derived,
            "free again once it ended"
        );
    }
}
