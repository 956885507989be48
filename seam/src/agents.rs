//! Which agents are live, who owns whom at run time, and whether a caller
//! may ask the human (SPEC §2 step 3).
//!
//! Only live runtime ownership counts. Durable lineage (a session that was a
//! sub-agent once) is not recorded here: a session resumed as a new root is
//! registered as a root and may ask.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ErrorCode;
use crate::error::AskError;
use crate::scope::Scope;
use crate::sync::lock;

/// One registration of an agent. Two handles are equal only when they name
/// the same registration: after an id is reused by a newer agent, the older
/// handle is stale and never mistaken for the newer one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AgentHandle {
    id: String,
    generation: u64,
}

impl AgentHandle {
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// The live agents of a host.
#[derive(Debug, Default)]
pub struct AgentRegistry {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    live: HashMap<String, Entry>,
}

/// Generations are unique in the process, so that a handle from another
/// registry is never taken for one of this registry's agents.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

#[derive(Debug)]
struct Entry {
    generation: u64,
    owner: Option<AgentHandle>,
    scope: Scope,
}

/// A caller that passed the policy: a live agent that no live agent owns.
#[derive(Debug, Clone)]
pub struct RootCaller {
    pub handle: AgentHandle,
    /// The agent's scope chain, for reaching tagged answerers.
    pub scope: Scope,
}

impl AgentRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a root agent (a top-level session or turn). Its scope is its
    /// id, inside `parent` when given (e.g. the session's scope). Registering
    /// an id that is live supersedes the earlier agent, whose handle goes stale.
    pub fn register_root(&self, id: impl Into<String>, parent: Option<&Scope>) -> AgentHandle {
        let id = id.into();
        let scope = match parent {
            Some(parent) => parent.child(id.clone()),
            None => Scope::root(id.clone()),
        };
        self.insert(id, None, scope)
    }

    /// Registers a sub-agent owned by `owner` at run time. While the owner is
    /// live, the sub-agent may not ask the human (`DELEGATED_CALLER`).
    pub fn register_delegate(&self, id: impl Into<String>, owner: &AgentHandle) -> AgentHandle {
        let id = id.into();
        let scope = {
            let inner = lock(&self.inner);
            match inner.entry(owner) {
                Some(entry) => entry.scope.child(id.clone()),
                None => Scope::root(id.clone()),
            }
        };
        self.insert(id, Some(owner.clone()), scope)
    }

    /// Ends an agent. Returns false when `handle` was not live (ending twice
    /// is harmless). A stale handle never ends the newer agent under its id.
    pub fn end(&self, handle: &AgentHandle) -> bool {
        let mut inner = lock(&self.inner);
        let live = inner.entry(handle).is_some();
        if live {
            inner.live.remove(handle.id());
        }
        live
    }

    /// Whether `handle` is the live agent registered under its id.
    pub fn is_live(&self, handle: &AgentHandle) -> bool {
        lock(&self.inner).entry(handle).is_some()
    }

    /// The policy: only a live agent that no live agent owns may ask.
    pub fn check_caller(&self, handle: &AgentHandle) -> Result<RootCaller, AskError> {
        let inner = lock(&self.inner);
        let Some(entry) = inner.entry(handle) else {
            return Err(AskError::new(
                ErrorCode::CallerNotLive,
                format!(
                    "agent {:?} is not live (it ended, or its id now belongs to a newer agent); \
                     only a running agent can ask the user",
                    handle.id()
                ),
            ));
        };
        if let Some(owner) = entry
            .owner
            .as_ref()
            .filter(|owner| inner.entry(owner).is_some())
        {
            return Err(AskError::new(
                ErrorCode::DelegatedCaller,
                format!(
                    "agent {:?} is a sub-agent delegated by {:?} and cannot ask the user directly. \
                     Finish your task without the answer: put the unresolved question or \
                     decision, with the options you see, into your final result for your \
                     parent agent, which can ask the user",
                    handle.id(),
                    owner.id()
                ),
            ));
        }
        Ok(RootCaller {
            handle: handle.clone(),
            scope: entry.scope.clone(),
        })
    }

    fn insert(&self, id: String, owner: Option<AgentHandle>, scope: Scope) -> AgentHandle {
        let generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner).live.insert(
            id.clone(),
            Entry {
                generation,
                owner,
                scope,
            },
        );
        AgentHandle { id, generation }
    }
}

impl Inner {
    /// The live entry `handle` names: none when its id is unknown, ended, or
    /// now registered to a newer agent.
    fn entry(&self, handle: &AgentHandle) -> Option<&Entry> {
        self.live
            .get(handle.id())
            .filter(|entry| entry.generation == handle.generation)
    }
}
