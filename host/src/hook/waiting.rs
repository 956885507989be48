//! The hooks of one agent session that wait for an answer. A hook process
//! that asks registers itself (a file in this user's state folder naming
//! its process); when the question is answered elsewhere first (at Claude
//! Code's terminal, which does not stop the hook), a later hook of the same
//! session ends it, and its question is withdrawn everywhere.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use ask_user_seam::files;

/// The folder of the waiting hooks, in the state folder.
const FOLDER: &str = "hooks";

/// A waiting hook's registration, taken back when dropped.
pub struct Waiting {
    file: PathBuf,
}

impl Waiting {
    /// Registers this process as waiting for `session` of `client`.
    pub fn register(state_dir: &Path, client: &str, session: &str) -> io::Result<Waiting> {
        let dir = folder(state_dir)?;
        let pid = std::process::id() as libc::pid_t;
        let file = dir.join(format!("{}{pid}.pid", prefix(client, session)));
        // When it started, so that a number used again is never taken for it.
        std::fs::write(&file, started(pid).unwrap_or_default())?;
        Ok(Waiting { file })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Ends every hook waiting for `session` of `client` (SIGTERM: each
/// withdraws its question). Returns how many were ended.
pub fn end(state_dir: &Path, client: &str, session: &str) -> io::Result<usize> {
    let dir = folder(state_dir)?;
    let prefix = prefix(client, session);
    let mut ended = 0;
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
        // A file left by a hook that died: its number may be another
        // process's now; only the hook that wrote it is signalled.
        let registered = std::fs::read_to_string(entry.path()).unwrap_or_default();
        if !is_hook(pid) || started(pid).is_none_or(|started| started != registered) {
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        if unsafe { libc::kill(pid, libc::SIGTERM) } == 0 {
            ended += 1;
        }
    }
    Ok(ended)
}

/// The folder, this user's alone.
fn folder(state_dir: &Path) -> io::Result<PathBuf> {
    files::private_dir(state_dir)?;
    files::trusted_dir(state_dir)?;
    let dir = state_dir.join(FOLDER);
    files::private_dir(&dir)?;
    Ok(dir)
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

/// Whether process `pid` is an `ask-user hook` of this user.
fn is_hook(pid: libc::pid_t) -> bool {
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
    fn a_registration_is_this_users_and_goes_with_it() {
        let state = tempfile::tempdir().unwrap();
        let waiting = Waiting::register(state.path(), "claude-code", "s/1").unwrap();
        let files: Vec<_> = std::fs::read_dir(state.path().join(FOLDER))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            files,
            [format!("claude-code.s_1.{}.pid", std::process::id())]
        );
        let registered = std::fs::read_to_string(
            state
                .path()
                .join(FOLDER)
                .join(format!("claude-code.s_1.{}.pid", std::process::id())),
        )
        .unwrap();
        assert_eq!(Some(registered), started(std::process::id() as libc::pid_t));
        // This test process is no hook: it is never signalled, and its
        // registration is taken for a stale one.
        assert_eq!(end(state.path(), "claude-code", "s/1").unwrap(), 0);
        drop(waiting);
        assert!(
            std::fs::read_dir(state.path().join(FOLDER))
                .unwrap()
                .next()
                .is_none()
        );
    }
}
