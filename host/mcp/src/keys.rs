//! The server's keys, random per process unless a secret is given (the
//! bearer token of `ask-user mcp --http`): each call's agent id, and the
//! seal of a 2026-07-28 client's `requestState`.
//!
//! A call's agent id is what an inbox question is filed under, so what lets
//! a call asked again after a restart find its question (and an answer
//! given meanwhile). It is `mcp-call-` and 128 bits of HMAC-SHA-256 of the
//! call's arguments, keyed from the secret: a server with the same secret
//! (one restarted with the same token) gives the same call the same id, and
//! a server with another secret (any other process: a per-run token is
//! random) never does. A call whose id is in use by a call under way in
//! this process (the same arguments, asked twice at once) gets a random id:
//! two live calls never share an agent.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use hmac::{Hmac, Mac};
use rmcp::model::RequestStateCodec;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What every call id starts with.
const PREFIX: &str = "mcp-call-";

/// The keys of one server.
pub(crate) struct Keys {
    pub call_ids: CallIds,
    request_state: [u8; 32],
    tasks: [u8; 32],
}

impl Keys {
    /// Keys of a random secret of this process.
    pub fn random() -> std::io::Result<Self> {
        Ok(Self::from(&ask_user_seam::secret::random::<32>()?[..]))
    }

    /// The name of the folder of the tasks kept under these keys: a server
    /// with another secret keeps its own (and never finds these).
    pub fn tasks_folder(&self) -> String {
        self.tasks[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The seal of `requestState`.
    pub fn request_state(&self) -> std::io::Result<Arc<RequestStateCodec>> {
        RequestStateCodec::try_new(self.request_state.to_vec())
            .map(Arc::new)
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

impl From<&[u8]> for Keys {
    /// Keys derived from `secret`, one per use.
    fn from(secret: &[u8]) -> Self {
        Keys {
            call_ids: CallIds {
                key: derive("call ids", secret),
                in_use: Arc::default(),
            },
            request_state: derive("request state", secret),
            tasks: derive("tasks", secret),
        }
    }
}

/// The key for `purpose` from `secret`.
fn derive(purpose: &str, secret: &[u8]) -> [u8; 32] {
    let mut key = Sha256::new();
    key.update(b"ask-user mcp\0");
    key.update(purpose.as_bytes());
    key.update(b"\0");
    key.update(secret);
    key.finalize().into()
}

/// Makes call ids from one key; clones share the ids in use.
#[derive(Clone)]
pub(crate) struct CallIds {
    key: [u8; 32],
    in_use: Arc<Mutex<HashSet<String>>>,
}

impl CallIds {
    /// The id of a call of `arguments`, in use until the [`CallId`] drops.
    /// It is keyed by their content, not their bytes: the same call sent
    /// with its keys in another order, or spaced otherwise, is the same call.
    pub fn of(&self, arguments: &Value) -> std::io::Result<CallId> {
        let derived = self.derived(arguments);
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
                id: ask_user_seam::secret::id(PREFIX)?,
                in_use: None,
            },
        })
    }

    /// The id derived from `arguments`, the same for every call of them
    /// (whereas a call's own id is random while another call holds it).
    pub fn derived(&self, arguments: &Value) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        let mut canonical = String::new();
        canonical_json(arguments, &mut canonical);
        mac.update(canonical.as_bytes());
        let digest = mac.finalize().into_bytes();
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("{PREFIX}{hex}")
    }
}

/// `value` as JSON with every object's keys sorted (by their UTF-16 code
/// units, as RFC 8785 orders them) and no spacing: one text for one content.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (n, (key, value)) in entries.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                canonical_json(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
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
    use serde_json::json;

    #[test]
    fn the_same_call_under_the_same_secret_has_the_same_id_and_no_other_does() {
        let ids = |secret: &[u8]| Keys::from(secret).call_ids;
        let a = ids(b"token-one");
        let restarted = ids(b"token-one");
        let other = ids(b"token-two");
        let id = a.of(&json!({"questions": []})).unwrap().id().to_owned();
        assert!(
            id.starts_with(PREFIX) && id.len() == PREFIX.len() + 32,
            "{id}"
        );
        assert_eq!(
            restarted
                .of(&json!({"questions": []}))
                .unwrap()
                .id()
                .to_owned(),
            id
        );
        assert_ne!(
            other.of(&json!({"questions": []})).unwrap().id().to_owned(),
            id
        );
        assert_ne!(
            a.of(&json!({"questions": [1]})).unwrap().id().to_owned(),
            id
        );
    }

    #[test]
    fn the_id_is_the_arguments_content_whatever_their_key_order_or_spacing() {
        let ids = Keys::from(&b"token"[..]).call_ids;
        let id = |text: &str| {
            let arguments: Value = serde_json::from_str(text).unwrap();
            ids.of(&arguments).unwrap().id().to_owned()
        };
        let first = id(r#"{"questions":[{"id":"a","question":"Go?","é":1,"z":{"b":1,"a":[2]}}]}"#);
        assert_eq!(
            id(r#"{ "questions" : [ {"z":{"a":[2],"b":1},"é":1,"question":"Go?","id":"a"} ] }"#),
            first
        );
        assert_ne!(id(r#"{"questions":[{"id":"a","question":"Go!"}]}"#), first);
        let mut canonical = String::new();
        canonical_json(
            &json!({"b": [1, {"d": "\"", "c": null}], "a": true}),
            &mut canonical,
        );
        assert_eq!(canonical, r#"{"a":true,"b":[1,{"c":null,"d":"\""}]}"#);
    }

    #[test]
    fn the_same_call_twice_at_once_gets_a_random_id_the_second_time() {
        let ids = Keys::from(&b"token"[..]).call_ids;
        let first = ids.of(&json!({})).unwrap();
        let second = ids.of(&json!({})).unwrap();
        assert_ne!(first.id(), second.id());
        assert!(second.id().starts_with(PREFIX) && second.id().len() == first.id().len());
        let derived = first.id().to_owned();
        drop((first, second));
        assert_eq!(
            ids.of(&json!({})).unwrap().id().to_owned(),
            derived,
            "free again once it ended"
        );
    }

    #[test]
    fn a_request_state_sealed_before_a_restart_opens_after_it_with_the_same_secret_only() {
        let options = rmcp::model::SealOptions::new()
            .associated_data(b"{}")
            .ttl(std::time::Duration::from_secs(60));
        let sealed = Keys::from(&b"token"[..])
            .request_state()
            .unwrap()
            .seal_json_with(&serde_json::json!({"form": "ask"}), &options)
            .unwrap();
        let opens = |secret: &[u8]| {
            Keys::from(secret)
                .request_state()
                .unwrap()
                .open_with(&sealed, b"{}")
                .is_ok()
        };
        assert!(opens(b"token"));
        assert!(!opens(b"another token"));
        let random = Keys::random().unwrap().request_state().unwrap();
        assert!(random.open_with(&sealed, b"{}").is_err());
    }
}
