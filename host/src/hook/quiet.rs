//! While an agent's own UI has the terminal (`ask-user hook run`), what
//! ask-user says goes to a log of the run's in the state folder
//! (`<client>/ask-user-<pid>.log`), named when the run ends and removed
//! when empty: the UI keeps the terminal's standard error, undisturbed.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::Answerers;
use crate::{CliError, Context};

/// This process's standard error sent to a log, until [`Quiet::end`] (or
/// dropped: an error, a panic).
pub struct Quiet {
    before: OwnedFd,
    log: PathBuf,
    agent: &'static str,
}

impl Quiet {
    /// Sends this process's standard error to `dir/ask-user-<pid>.log`
    /// while `agent`'s UI runs.
    pub fn start(dir: &Path, agent: &'static str) -> Result<Quiet, CliError> {
        let log = dir.join(format!("ask-user-{}.log", std::process::id()));
        let to_log = || -> std::io::Result<OwnedFd> {
            let file = std::fs::File::create(&log)?;
            let before = std::io::stderr().as_fd().try_clone_to_owned()?;
            // SAFETY: both are open descriptors of this process.
            if unsafe { libc::dup2(file.as_raw_fd(), libc::STDERR_FILENO) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(before)
        };
        let before =
            to_log().context(|| format!("cannot send ask-user's log to {}", log.display()))?;
        Ok(Quiet { before, log, agent })
    }

    /// The terminal's standard error, for the UI.
    pub fn terminal(&self) -> std::io::Result<std::process::Stdio> {
        Ok(self.before.try_clone()?.into())
    }

    /// Standard error back to the terminal, where `answerers` then names
    /// the log if anything was said; an empty log is removed.
    pub fn end(self, answerers: &dyn Answerers) {
        let log = self.log.clone();
        let agent = self.agent;
        drop(self);
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) {
            answerers.say(&format!(
                "what ask-user said while {agent} ran: {}",
                log.display()
            ));
        } else {
            let _ = std::fs::remove_file(&log);
        }
    }
}

impl Drop for Quiet {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::dup2(self.before.as_raw_fd(), libc::STDERR_FILENO) };
    }
}
