//! Which agents are live, who owns whom at run time, and whether a caller
//! may ask the human (SPEC §2 step 3).
//!
//! Only live runtime ownership counts. Durable lineage (a session that was a
//! sub-agent once) is not recorded here: a session resumed as a new root is
//! registered as a root and may ask.
//!
//! What a delegated sub-agent may do is the host's [`Delegated`] policy:
//! refused (`DELEGATED_CALLER`, the default), or relayed to the human,
//! labelled with its chain of agents and at most
//! [`max_asks`](Delegated::Relay::max_asks) times per root per turn
//! (`DELEGATED_ASK_LIMIT` past it). A sub-agent any of whose ancestors has
//! ended is not live under either (`CALLER_NOT_LIVE`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

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
    /// A root's: the asks its sub-agents were relayed this turn.
    delegated_asks: u32,
    /// A sub-agent's: its next asks that its root's budget counted
    /// already (the retry of a call whose first round asked).
    counted: u32,
    /// Cancelled when it ends (or is superseded), and so when any agent
    /// above it ends: a child of its owner's.
    ended: CancellationToken,
}

/// What a host does when a delegated sub-agent asks the human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Delegated {
    /// Refuse it with `DELEGATED_CALLER`: its parent asks instead.
    #[default]
    Refuse,
    /// Relay it to the human through the same answerers, saying which
    /// agent asks ([`Caller::chain`]); at most `max_asks` sub-agent asks per
    /// root per turn ([`AgentRegistry::start_turn`]), `DELEGATED_ASK_LIMIT`
    /// past it.
    Relay { max_asks: u32 },
}

/// The sub-agent asks a relay allows per root per turn unless the host
/// says otherwise: a few, so that a swarm of sub-agents cannot flood the
/// human.
pub const DEFAULT_MAX_DELEGATED_ASKS: u32 = 3;

/// A caller that passed the policy: a live root agent, or under
/// [`Delegated::Relay`] a live sub-agent whose every ancestor is live.
#[derive(Debug, Clone)]
pub struct Caller {
    pub handle: AgentHandle,
    /// The agent's scope chain, for reaching tagged answerers.
    pub scope: Scope,
    /// The root it asks under (itself, for a root).
    pub root: AgentHandle,
    /// For a sub-agent: the names of its chain as the host registered
    /// them, root first, itself last (`["session-1", "reviewer"]`). Empty
    /// for a root.
    pub chain: Vec<String>,
    /// Cancelled once it or any agent above it is no longer live: its
    /// question, still waiting, is withdrawn then (`CALLER_NOT_LIVE`).
    pub ended: CancellationToken,
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
        self.insert(id, None, scope, CancellationToken::new())
    }

    /// Registers a sub-agent owned by `owner` at run time. It asks the human
    /// only as the host's [`Delegated`] policy says, and only while every
    /// agent above it is live.
    pub fn register_delegate(&self, id: impl Into<String>, owner: &AgentHandle) -> AgentHandle {
        let id = id.into();
        let (scope, ended) = {
            let inner = lock(&self.inner);
            match inner.entry(owner) {
                Some(entry) => (entry.scope.child(id.clone()), entry.ended.child_token()),
                // Its owner is not live: neither is it, ever.
                None => {
                    let ended = CancellationToken::new();
                    ended.cancel();
                    (Scope::root(id.clone()), ended)
                }
            }
        };
        self.insert(id, Some(owner.clone()), scope, ended)
    }

    /// Ends an agent: a question of its, or of any sub-agent under it,
    /// still waiting is withdrawn (`CALLER_NOT_LIVE`). Returns false when
    /// `handle` was not live (ending twice is harmless). A stale handle
    /// never ends the newer agent under its id.
    pub fn end(&self, handle: &AgentHandle) -> bool {
        let mut inner = lock(&self.inner);
        let live = inner.entry(handle).is_some();
        if live && let Some(entry) = inner.live.remove(handle.id()) {
            entry.ended.cancel();
        }
        live
    }

    /// Whether `handle` is the live agent registered under its id.
    pub fn is_live(&self, handle: &AgentHandle) -> bool {
        lock(&self.inner).entry(handle).is_some()
    }

    /// The next `asks` of `handle` were counted against its root's budget
    /// already: a protocol that answers a form in two rounds runs the call
    /// again with the answer, and that ask is the same one, never refused
    /// once a person may have answered it. Nothing for a root, whose asks
    /// are not counted.
    pub fn counted_already(&self, handle: &AgentHandle, asks: u32) {
        if let Some(entry) = lock(&self.inner).entry_mut(handle) {
            entry.counted += asks;
        }
    }

    /// A new turn of `root`: its sub-agents may be relayed
    /// [`max_asks`](Delegated::Relay::max_asks) more asks. (A root
    /// registered anew starts with the whole budget.) Returns false when
    /// `root` is not live.
    pub fn start_turn(&self, root: &AgentHandle) -> bool {
        let mut inner = lock(&self.inner);
        match inner.entry_mut(root) {
            Some(entry) => {
                entry.delegated_asks = 0;
                true
            }
            None => false,
        }
    }

    /// The policy: a live agent that no agent owns may ask; a sub-agent
    /// whose every ancestor is live is refused (`DELEGATED_CALLER`), or
    /// under [`Delegated::Relay`] counted against its root's budget and
    /// admitted; anything else is not live (`CALLER_NOT_LIVE`).
    pub fn check_caller(
        &self,
        handle: &AgentHandle,
        delegated: Delegated,
    ) -> Result<Caller, AskError> {
        let mut inner = lock(&self.inner);
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
        let (scope, ended) = (entry.scope.clone(), entry.ended.clone());
        let Some(owner) = entry.owner.clone() else {
            return Ok(Caller {
                handle: handle.clone(),
                scope,
                root: handle.clone(),
                chain: Vec::new(),
                ended,
            });
        };
        // Up to the root: every ancestor must be live.
        let mut chain = vec![handle.id().to_owned()];
        let mut ancestor = owner.clone();
        let root = loop {
            let Some(entry) = inner.entry(&ancestor) else {
                return Err(AskError::new(
                    ErrorCode::CallerNotLive,
                    format!(
                        "agent {:?} is a sub-agent whose parent {:?} has ended, so it is not live; \
                         a sub-agent can ask only while every agent above it runs. Put the \
                         question into your final result instead",
                        handle.id(),
                        ancestor.id()
                    ),
                ));
            };
            chain.push(ancestor.id().to_owned());
            match entry.owner.clone() {
                Some(next) => ancestor = next,
                None => break ancestor,
            }
        };
        chain.reverse();
        let Delegated::Relay { max_asks } = delegated else {
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
        };
        let counted = &mut inner
            .entry_mut(handle)
            .expect("the caller was found live above")
            .counted;
        let already = *counted > 0;
        *counted = counted.saturating_sub(1);
        let budget = &mut inner
            .entry_mut(&root)
            .expect("the root was found live above")
            .delegated_asks;
        if !already && *budget >= max_asks {
            return Err(AskError::new(
                ErrorCode::DelegatedAskLimit,
                format!(
                    "the sub-agents of {:?} may ask the user at most {} per turn, and already \
                     have: do not ask again. Finish your task without the answer: put the \
                     unresolved question, with the options you see, into your final result for \
                     your parent agent",
                    root.id(),
                    times(max_asks)
                ),
            ));
        }
        if !already {
            *budget += 1;
        }
        Ok(Caller {
            handle: handle.clone(),
            scope,
            root,
            chain,
            ended,
        })
    }

    fn insert(
        &self,
        id: String,
        owner: Option<AgentHandle>,
        scope: Scope,
        ended: CancellationToken,
    ) -> AgentHandle {
        let generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        let superseded = lock(&self.inner).live.insert(
            id.clone(),
            Entry {
                generation,
                owner,
                scope,
                delegated_asks: 0,
                counted: 0,
                ended,
            },
        );
        // The agent it replaces under its id is no longer live.
        if let Some(entry) = superseded {
            entry.ended.cancel();
        }
        AgentHandle { id, generation }
    }
}

/// "once", "twice", "3 times".
fn times(n: u32) -> String {
    match n {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        n => format!("{n} times"),
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

    fn entry_mut(&mut self, handle: &AgentHandle) -> Option<&mut Entry> {
        self.live
            .get_mut(handle.id())
            .filter(|entry| entry.generation == handle.generation)
    }
}

/// The `[policy]` table of the config file: who may ask the human.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
    delegated: Option<DelegatedWord>,
    max_delegated_asks: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum DelegatedWord {
    Refuse,
    Relay,
}

impl PolicySettings {
    /// What a delegated sub-agent's ask gets.
    pub fn delegated(self) -> Result<Delegated, String> {
        match (self.delegated, self.max_delegated_asks) {
            (None | Some(DelegatedWord::Refuse), None) => Ok(Delegated::Refuse),
            (None | Some(DelegatedWord::Refuse), Some(_)) => Err(
                "max_delegated_asks counts relayed asks: it needs delegated = \"relay\"".to_owned(),
            ),
            (Some(DelegatedWord::Relay), max_asks) => Ok(Delegated::Relay {
                max_asks: max_asks.unwrap_or(DEFAULT_MAX_DELEGATED_ASKS),
            }),
        }
    }
}
