//! The hooks of one agent session that wait for an answer. A hook process
//! that asks registers itself (a file in this user's state folder naming
//! its process and its batch of questions); when the batch is answered
//! elsewhere first (at Claude Code's terminal, which does not stop the
//! hook), a later hook of the same session tells the hooks that asked it
//! ([`ANSWERED_ELSEWHERE`]), and each withdraws its question saying so.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use ask_user_seam::files;

/// The folder of the waiting hooks, in the state folder.
const FOLDER: &str = "hooks";

/// The signal that tells a waiting hook its batch was answered elsewhere.
/// A hook listens for it before it registers (its default action would end
/// the process without withdrawing anything).
pub const ANSWERED_ELSEWHERE: libc::c_int = libc::SIGUSR1;

/// A waiting hook's registration, taken back when dropped.
pub struct Waiting {
    file: PathBuf,
}

impl Waiting {
    /// Registers this process as asking `batch` (a fingerprint of its
    /// questions) in `session` of `client`.
    pub fn register(
        state_dir: &Path,
        client: &str,
        session: &str,
        batch: &str,
    ) -> io::Result<Waiting> {
        let dir = folder(state_dir)?;
        let pid = std::process::id() as libc::pid_t;
        let file = dir.join(format!("{}{pid}.pid", prefix(client, session)));
        // When it started, so that a number used again is never taken for it.
        let registration = Registration {
            pid,
            started: started(pid).unwrap_or_default(),
            batch: batch.to_owned(),
        };
        // The folder is this user's alone.
        std::fs::write(&file, registration.to_string())?;
        Ok(Waiting { file })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// `batch` of `session` was answered elsewhere: the hooks still asking it
/// are told ([`ANSWERED_ELSEWHERE`]). Returns how many were.
pub fn answered_elsewhere(
    state_dir: &Path,
    client: &str,
    session: &str,
    batch: &str,
) -> io::Result<usize> {
    Ok(registrations(state_dir, client, session)?
        .iter()
        .filter(|hook| hook.batch == batch && hook.signal(ANSWERED_ELSEWHERE))
        .count())
}

/// A live hook's registration: its process (a number and when it started)
/// and its batch.
struct Registration {
    pid: libc::pid_t,
    started: String,
    batch: String,
}

impl std::fmt::Display for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}\n{}", self.started, self.batch)
    }
}

impl Registration {
    /// Sends the hook `signal`, unless its process is gone.
    fn signal(&self, signal: libc::c_int) -> bool {
        is_hook(self.pid, &self.started) && unsafe { libc::kill(self.pid, signal) } == 0
    }
}

/// The live hooks registered for `session` of `client`. A file left by a
/// hook that died is removed: its number may be another process's now.
fn registrations(state_dir: &Path, client: &str, session: &str) -> io::Result<Vec<Registration>> {
    let dir = folder(state_dir)?;
    let prefix = prefix(client, session);
    let mut live = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".pid"))
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let mut lines = text.lines().map(str::to_owned);
        let registration = Registration {
            pid,
            started: lines.next().unwrap_or_default(),
            batch: lines.next().unwrap_or_default(),
        };
        if is_hook(pid, &registration.started) {
            live.push(registration);
        } else {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(live)
}

/// The folder, this user's alone.
fn folder(state_dir: &Path) -> io::Result<PathBuf> {
    let state_dir = files::private_dir(state_dir)?;
    files::private_dir(&state_dir.join(FOLDER))
}

/// The start of a registration's file name: the client, and the session
/// reduced to characters safe in a file name.
fn prefix(client: &str, session: &str) -> String {
    let session: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect();
    format!("{client}.{session}.")
}

/// When process `pid` started (clock ticks after boot, `/proc/PID/stat`).
fn started(pid: libc::pid_t) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state, then fields 4…;
    // the start time is field 22.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_owned)
}

/// Whether process `pid` is the `ask-user hook` that started at `started`.
fn is_hook(pid: libc::pid_t, started_at: &str) -> bool {
    if started(pid).is_none_or(|started| started != started_at) {
        return false;
    }
    let Ok(command) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let words: Vec<&[u8]> = command.split(|&b| b == 0).collect();
    let program = words
        .first()
        .map(|w| Path::new(std::ffi::OsStr::from_bytes(w)));
    program
        .and_then(Path::file_name)
        .is_some_and(|name| name == "ask-user")
        && words.get(1) == Some(&&b"hook"[..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_names_the_process_and_batch_and_goes_with_it() {
        let state = tempfile::tempdir().unwrap();
        let waiting = Waiting::register(state.path(), "claude-code", "s/1", "b1").unwrap();
        let pid = std::process::id();
        let files: Vec<_> = std::fs::read_dir(state.path().join(FOLDER))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(files, [format!("claude-code.s_1.{pid}.pid")]);
        let registered =
            std::fs::read_to_string(state.path().join(FOLDER).join(&files[0])).unwrap();
        let started = started(pid as libc::pid_t).unwrap();
        assert_eq!(registered, format!("{started}\nb1\n"));
        drop(waiting);
        assert!(
            std::fs::read_dir(state.path().join(FOLDER))
                .unwrap()
                .next()
                .is_none()
        );
    }

    #[test]
    fn only_a_live_hook_counts_and_a_stale_file_is_removed() {
        let state = tempfile::tempdir().unwrap();
        // This test process is no `ask-user hook`: never signalled, its
        // registration taken for a stale one.
        let _waiting = Waiting::register(state.path(), "claude-code", "s", "b1").unwrap();
        assert!(
            registrations(state.path(), "claude-code", "s")
                .unwrap()
                .is_empty()
        );
        assert!(
            std::fs::read_dir(state.path().join(FOLDER))
                .unwrap()
                .next()
                .is_none(),
            "the stale file is gone"
        );
    }
}
