//! Which MCP calls a client's sub-agents made. Claude Code names the
//! sub-agent to its hooks (`agent_id` and `agent_type` of `PreToolUse`),
//! not to an MCP server it did not make; both see the tool use's id (the
//! call's `_meta` carries it as `claudecode/toolUseId`). So the hook leaves
//! a note under that id in this user's state folder, and `ask-user mcp`
//! reads it when the call comes (the hook ends before the call is made).
//! A note stays for the call's later rounds (a 2026-07-28 client calls
//! again with the form's answer, under the same id) and is swept a day
//! later.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ask_user_mcp::SubAgent;
use ask_user_seam::files;
use serde::{Deserialize, Serialize};

/// The folder of the notes, in the state folder.
const FOLDER: &str = "calls";

/// A note no call took by then (the call was denied, or its server was
/// not ours) is removed by the next hook that writes one.
const STALE: Duration = Duration::from_secs(24 * 60 * 60);

/// The largest note read: a few ids.
const MAX_NOTE_BYTES: u64 = 4096;

#[derive(Serialize, Deserialize)]
struct Note {
    session: String,
    turn: Option<String>,
    name: String,
}

/// Notes that `client`'s tool use `call` was made by `sub`.
pub fn note(state_dir: &Path, client: &str, call: &str, sub: &SubAgent) -> io::Result<()> {
    let Some(file) = file(state_dir, client, call)? else {
        return Ok(());
    };
    // The notes older than STALE go.
    files::remove_older_than(file.parent().expect("a file in the folder"), STALE);
    let note = Note {
        session: sub.session.clone(),
        turn: sub.turn.clone(),
        name: sub.name.clone(),
    };
    // Whole or not at all: the server may read it at once.
    let partial = file.with_extension("partial");
    std::fs::write(&partial, serde_json::to_vec(&note).expect("strings"))?;
    std::fs::rename(&partial, &file)
}

/// Forgets any note under `client`'s tool use `call`: the main agent makes
/// it, whoever made a call under the same id before (a gateway that numbers
/// its calls gives each session the same ids).
pub fn forget(state_dir: &Path, client: &str, call: &str) -> io::Result<()> {
    let Some(file) = file(state_dir, client, call)? else {
        return Ok(());
    };
    match std::fs::remove_file(&file) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// The sub-agent that made `client`'s tool use `call`. `None` when there
/// is no note (a main agent's call, hooks not installed), or it cannot be
/// read.
pub fn read(state_dir: &Path, client: &str, call: &str) -> Option<SubAgent> {
    let file = file(state_dir, client, call).ok()??;
    let text = files::read_bounded(&file, MAX_NOTE_BYTES).ok()?;
    let note: Note = serde_json::from_str(&text).ok()?;
    Some(SubAgent {
        session: note.session,
        turn: note.turn,
        name: note.name,
    })
}

/// The note's file for `call`; `None` when the id is not a plain token (it
/// names a file: no `/`, no `..`).
fn file(state_dir: &Path, client: &str, call: &str) -> io::Result<Option<PathBuf>> {
    let plain = !call.is_empty()
        && call.len() <= 128
        && call
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !plain {
        return Ok(None);
    }
    let state_dir = files::private_dir(state_dir)?;
    let folder = files::private_dir(&state_dir.join(FOLDER))?;
    Ok(Some(folder.join(format!("{client}-{call}.json"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn sub() -> SubAgent {
        SubAgent {
            session: "claude-code-s1".to_owned(),
            turn: Some("p1".to_owned()),
            name: "general-purpose a1b2c3d4".to_owned(),
        }
    }

    #[test]
    fn a_note_is_read_by_its_call_only_and_an_odd_id_names_no_file() {
        let state = tempfile::tempdir().unwrap();
        note(state.path(), "claude-code", "toolu_01", &sub()).unwrap();
        assert_eq!(read(state.path(), "claude-code", "toolu_02"), None);
        assert_eq!(read(state.path(), "codex", "toolu_01"), None);
        assert_eq!(read(state.path(), "claude-code", "toolu_01"), Some(sub()));
        assert_eq!(
            read(state.path(), "claude-code", "toolu_01"),
            Some(sub()),
            "for the call's next round too"
        );
        // A main agent's call under the same id (another session's, where
        // ids repeat) is nobody's sub-agent's.
        forget(state.path(), "claude-code", "toolu_01").unwrap();
        assert_eq!(read(state.path(), "claude-code", "toolu_01"), None);
        forget(state.path(), "claude-code", "toolu_01").unwrap();
        std::fs::remove_dir_all(state.path().join(FOLDER)).unwrap();
        for odd in ["", "../toolu_01", "a/b", "x.json", &"t".repeat(129)] {
            note(state.path(), "claude-code", odd, &sub()).unwrap();
            assert_eq!(read(state.path(), "claude-code", odd), None, "{odd:?}");
        }
        let left = std::fs::read_dir(state.path().join(FOLDER)).map_or(0, Iterator::count);
        assert_eq!(left, 0, "no file for an odd id");
    }

    #[test]
    fn a_note_no_call_took_is_swept_a_day_later() {
        let state = tempfile::tempdir().unwrap();
        note(state.path(), "claude-code", "toolu_old", &sub()).unwrap();
        let old = state.path().join(FOLDER).join("claude-code-toolu_old.json");
        let two_days = SystemTime::now() - 2 * STALE;
        let file = std::fs::File::options().write(true).open(&old).unwrap();
        file.set_modified(two_days).unwrap();
        note(state.path(), "claude-code", "toolu_new", &sub()).unwrap();
        assert!(!old.exists(), "the stale note was swept");
        assert_eq!(read(state.path(), "claude-code", "toolu_new"), Some(sub()));
    }
}
