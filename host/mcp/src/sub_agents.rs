//! Sub-agents' calls. An MCP call carries no caller an MCP server can
//! trust, and Claude Code names no sub-agent to a server it did not make;
//! a client's hooks can ([`SubAgents`], given by the host). A call a
//! sub-agent made runs as a sub-agent of a root kept for the client's
//! session, so the host's `[policy] delegated` applies to it: refused with
//! `DELEGATED_CALLER` (the default), or relayed and labelled on every
//! surface ("Asked by sub-agent claude-code-… › general-purpose …"), the
//! relay's budget counted per turn of the session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ask_user_seam::{AgentHandle, AgentRegistry};
use serde_json::{Map, Value};

/// The most client sessions whose root is kept; past it, the one seen
/// longest ago goes (its sub-agents' calls then end `CALLER_NOT_LIVE`).
const MAX_SESSIONS: usize = 4096;

/// A call a client's sub-agent made, as its hooks told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAgent {
    /// The client's session (its key in the inbox too: `claude-code-<id>`).
    pub session: String,
    /// The session's turn (Claude Code's `prompt_id`): the relay's budget
    /// starts again with each.
    pub turn: Option<String>,
    /// The sub-agent, as people read it (`general-purpose a1b2c3d4`).
    pub name: String,
}

/// Tells which calls a client's sub-agents made, from a call's `_meta`.
pub trait SubAgents: Send + Sync {
    /// The sub-agent that made the call whose `_meta` is `meta`; `None`
    /// for a main agent's call, or a call nothing is known of.
    fn of(&self, meta: &Map<String, Value>) -> Option<SubAgent>;
}

/// The roots kept for the clients' sessions.
#[derive(Clone, Default)]
pub(crate) struct Sessions(Arc<Mutex<Known>>);

#[derive(Default)]
struct Known {
    roots: HashMap<String, Root>,
    seen: u64,
}

struct Root {
    agent: AgentHandle,
    turn: Option<String>,
    seen: u64,
}

impl Sessions {
    /// The live root of `sub`'s session, registered when there is none, its
    /// turn started again when `sub` is of another turn.
    pub(crate) fn root_of(&self, agents: &AgentRegistry, sub: &SubAgent) -> AgentHandle {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.seen += 1;
        let seen = kept.seen;
        if let Some(root) = kept.roots.get_mut(&sub.session)
            && agents.is_live(&root.agent)
        {
            if root.turn != sub.turn {
                agents.start_turn(&root.agent);
                root.turn.clone_from(&sub.turn);
            }
            root.seen = seen;
            return root.agent.clone();
        }
        if kept.roots.len() >= MAX_SESSIONS
            && let Some(oldest) = kept
                .roots
                .iter()
                .min_by_key(|(_, root)| root.seen)
                .map(|(session, _)| session.clone())
            && let Some(root) = kept.roots.remove(&oldest)
        {
            agents.end(&root.agent);
        }
        let agent = agents.register_root(sub.session.clone(), None);
        let root = Root {
            agent: agent.clone(),
            turn: sub.turn.clone(),
            seen,
        };
        kept.roots.insert(sub.session.clone(), root);
        agent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::{Delegated, ErrorCode};

    fn sub(session: &str, turn: &str) -> SubAgent {
        SubAgent {
            session: session.to_owned(),
            turn: Some(turn.to_owned()),
            name: "general-purpose a1".to_owned(),
        }
    }

    #[test]
    fn a_session_keeps_one_root_and_a_new_turn_starts_its_budget_again() {
        let agents = AgentRegistry::new();
        let sessions = Sessions::default();
        let first = sessions.root_of(&agents, &sub("s1", "t1"));
        assert_eq!(first.id(), "s1");
        let again = sessions.root_of(&agents, &sub("s1", "t1"));
        assert_eq!(again, first, "the same root for the same session");
        assert!(agents.is_live(&first));
        let other = sessions.root_of(&agents, &sub("s2", "t1"));
        assert_ne!(other, first);
        // One relayed ask a turn: the second of turn t1 is refused, the
        // first of turn t2 admitted.
        let relay = Delegated::Relay { max_asks: 1 };
        let worker = agents.register_delegate("general-purpose a1", &first);
        assert!(agents.check_caller(&worker, relay).is_ok());
        let refused = agents.check_caller(&worker, relay).unwrap_err();
        assert_eq!(refused.code(), Some(&ErrorCode::DelegatedAskLimit));
        sessions.root_of(&agents, &sub("s1", "t1"));
        assert!(
            agents.check_caller(&worker, relay).is_err(),
            "the same turn"
        );
        sessions.root_of(&agents, &sub("s1", "t2"));
        assert!(agents.check_caller(&worker, relay).is_ok(), "a new turn");
        // Ended from elsewhere: a new root, not a dead one.
        agents.end(&first);
        let renewed = sessions.root_of(&agents, &sub("s1", "t2"));
        assert!(agents.is_live(&renewed) && renewed != first);
    }

    /// Over protocol 2026-07-28 a form is two rounds, each a run of the
    /// call: the retry's ask is the one the first round counted, and is
    /// never refused once a person may have answered it; a new ask is.
    #[test]
    fn the_retry_of_a_forms_round_is_not_counted_again() {
        let agents = AgentRegistry::new();
        let sessions = Sessions::default();
        let root = sessions.root_of(&agents, &sub("s1", "t1"));
        let relay = Delegated::Relay { max_asks: 1 };
        let first_round = agents.register_delegate("general-purpose a1", &root);
        assert!(agents.check_caller(&first_round, relay).is_ok());
        agents.end(&first_round);
        let retry = agents.register_delegate("general-purpose a1", &root);
        agents.counted_already(&retry, 1);
        assert!(agents.check_caller(&retry, relay).is_ok(), "the retry");
        let refused = agents.check_caller(&retry, relay).unwrap_err();
        assert_eq!(refused.code(), Some(&ErrorCode::DelegatedAskLimit));
    }
}
