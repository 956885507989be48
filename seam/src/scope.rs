//! Scopes: keys (an agent, a session) arranged in parent chains, which decide
//! which tagged answerers a request reaches.

use std::sync::Arc;

/// A scope key with its chain of ancestors. Cheap to clone.
///
/// A request from an agent reaches answerers tagged with any key on the
/// agent's scope chain (its own key and its ancestors'), never those of
/// siblings or descendants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope(Arc<Node>);

#[derive(Debug, PartialEq, Eq)]
struct Node {
    key: String,
    parent: Option<Scope>,
}

impl Scope {
    /// A scope with no parent, e.g. a session.
    pub fn root(key: impl Into<String>) -> Self {
        Scope(Arc::new(Node {
            key: key.into(),
            parent: None,
        }))
    }

    /// A scope inside this one, e.g. an agent of a session.
    pub fn child(&self, key: impl Into<String>) -> Self {
        Scope(Arc::new(Node {
            key: key.into(),
            parent: Some(self.clone()),
        }))
    }

    pub fn key(&self) -> &str {
        &self.0.key
    }

    pub fn parent(&self) -> Option<&Scope> {
        self.0.parent.as_ref()
    }

    /// Whether `key` is this scope's key or an ancestor's.
    pub fn reaches(&self, key: &str) -> bool {
        let mut scope = Some(self);
        while let Some(s) = scope {
            if s.key() == key {
                return true;
            }
            scope = s.parent();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::Scope;

    #[test]
    fn a_scope_reaches_its_own_key_and_its_ancestors_only() {
        let session = Scope::root("session");
        let agent = session.child("agent");
        let helper = agent.child("helper");
        let sibling = session.child("sibling");
        assert!(helper.reaches("helper"));
        assert!(helper.reaches("agent"));
        assert!(helper.reaches("session"));
        assert!(!agent.reaches("helper"), "never a descendant's");
        assert!(!helper.reaches("sibling"), "never a sibling's");
        assert!(!sibling.reaches("agent"));
        assert!(!session.reaches("sess"), "keys match whole, not by prefix");
    }

    #[test]
    fn a_child_knows_its_parent() {
        let session = Scope::root("session");
        let agent = session.child("agent");
        assert_eq!(agent.key(), "agent");
        assert_eq!(agent.parent(), Some(&session));
        assert_eq!(session.parent(), None);
    }
}
