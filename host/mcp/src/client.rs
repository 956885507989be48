//! What a client can do, decided in one place, once a request: from the
//! protocol it speaks, and, where that says too little, from a table of
//! clients whose forms do less than their protocol says, by the exact name
//! each gives (`clientInfo.name`).

use rmcp::model::ProtocolVersion;
use rmcp::service::{RequestContext, RoleServer};

use ask_user_answerers::form::Renders;

/// The newest protocol this server speaks, offered in the handshake.
pub const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The first protocol whose forms show lists (a multi-select question as
/// one field).
const LISTS: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The first protocol whose form ends the call and comes back as a second
/// round of it (the answer sealed in the call's `requestState`).
const ROUNDS: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// What a known client cannot do, whatever its protocol and capabilities
/// say.
struct Quirks {
    lists: bool,
    text_last: bool,
    pages: bool,
    /// Its model takes a task's result as the person's answer.
    tasks: bool,
}

/// The clients known to do less, by their exact name.
const KNOWN: &[(&str, Quirks)] = &[
    // Codex (0.169 to 0.171) shows no lists, cannot leave an empty last
    // text field, and declines a page offer without showing it.
    (
        "codex-mcp-client",
        Quirks {
            lists: false,
            text_last: false,
            pages: false,
            tasks: true,
        },
    ),
    // Claude Code (2.1.328) takes tasks, runs them in the background and
    // hands the model their results later, under the words "Do NOT
    // interpret this as user acknowledgement, confirmation, or response to
    // any pending question": the person's answers, told to be no answer.
    (
        "claude-code",
        Quirks {
            lists: true,
            text_last: true,
            pages: true,
            tasks: false,
        },
    ),
];

/// How people know the clients whose names are not words for them.
const LABELS: &[(&str, &str)] = &[
    ("claude-code", "Claude Code"),
    ("codex-mcp-client", "Codex"),
    ("gemini-cli-mcp-client", "Gemini CLI"),
];

/// The longest label taken from a client (in characters).
const MAX_LABEL: usize = 60;

/// How a client that said `name` (and maybe `title`) is named where its
/// questions wait: a known client as people know it, else its title or
/// name, printable and at most [`MAX_LABEL`] characters; none for a client
/// that said nothing printable.
pub fn label(name: &str, title: Option<&str>) -> Option<String> {
    if let Some((_, known)) = LABELS.iter().find(|(known, _)| *known == name) {
        return Some((*known).to_owned());
    }
    let said = title
        .filter(|title| !title.trim().is_empty())
        .unwrap_or(name);
    ask_user_seam::text::name_line(said, MAX_LABEL)
}

/// A client, as this server serves it.
pub(crate) struct Client {
    /// Its form comes back as a second round of the call.
    pub rounds: bool,
    /// What its form shows.
    pub renders: Renders,
    /// It sends its person to a page it is offered.
    pub follows_pages: bool,
    /// It takes a call as a task ([`crate::tasks`]).
    pub takes_tasks: bool,
}

impl Client {
    /// The client of `context`: its protocol from the request (2026-07-28)
    /// or the handshake (before), and its name.
    pub fn of(context: &RequestContext<RoleServer>) -> Client {
        let version = context.protocol_version();
        let name = context.client_info().map(|info| info.name.clone());
        let tasks = crate::tasks::declared(context.client_capabilities().as_ref());
        Client::from(version, name.as_deref(), tasks)
    }

    /// The client that speaks `version`, says `name`, and declared the
    /// Tasks extension or not (`tasks`).
    fn from(version: Option<ProtocolVersion>, name: Option<&str>, tasks: bool) -> Client {
        let at_least = |first: ProtocolVersion| version.as_ref().is_some_and(|v| *v >= first);
        let quirks = KNOWN
            .iter()
            .find(|(known, _)| Some(*known) == name)
            .map(|(_, quirks)| quirks);
        Client {
            rounds: at_least(ROUNDS),
            renders: Renders {
                arrays: at_least(LISTS) && quirks.is_none_or(|q| q.lists),
                text_last: quirks.is_none_or(|q| q.text_last),
            },
            follows_pages: quirks.is_none_or(|q| q.pages),
            takes_tasks: tasks && quirks.is_none_or(|q| q.tasks),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_named_as_people_know_it_and_never_by_what_would_not_print() {
        assert_eq!(
            label("gemini-cli-mcp-client", None).as_deref(),
            Some("Gemini CLI")
        );
        assert_eq!(
            label("codex-mcp-client", Some("Codex")).as_deref(),
            Some("Codex")
        );
        assert_eq!(label("zed", Some("Zed")).as_deref(), Some("Zed"));
        assert_eq!(label("my-agent", Some(" ")).as_deref(), Some("my-agent"));
        assert_eq!(
            label("evil\u{1b}[2Jname\n", None).as_deref(),
            Some("evil [2Jname")
        );
        assert_eq!(label(&"x".repeat(500), None).unwrap().len(), MAX_LABEL);
        assert_eq!(label("\n\t", None), None);
    }

    #[test]
    fn the_protocol_decides_and_a_known_clients_quirks_narrow_it() {
        let newest = Client::from(Some(PROTOCOL), Some("claude-code"), true);
        assert!(newest.rounds && newest.renders.arrays && newest.follows_pages);
        // Claude Code declares tasks, and would tell its model that the
        // answers are none.
        assert!(!newest.takes_tasks);
        let older = Client::from(Some(ProtocolVersion::V_2025_11_25), Some("vscode"), true);
        assert!(!older.rounds && older.renders.arrays && older.renders.text_last);
        assert!(older.takes_tasks);
        let oldest = Client::from(Some(ProtocolVersion::V_2025_06_18), None, false);
        assert!(!oldest.renders.arrays && !oldest.takes_tasks);
        let codex = Client::from(
            Some(ProtocolVersion::V_2025_11_25),
            Some("codex-mcp-client"),
            false,
        );
        assert!(!codex.renders.arrays && !codex.renders.text_last && !codex.follows_pages);
        // A name is matched whole: another client that mentions Codex is not it.
        let other = Client::from(
            Some(ProtocolVersion::V_2025_11_25),
            Some("my-codex-wrapper"),
            false,
        );
        assert!(other.renders.arrays && other.follows_pages);
    }
}
