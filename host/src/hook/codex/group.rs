//! Ending Codex's processes whole. Codex installed from npm is a Node
//! launcher that runs the native binary as its child and forwards only the
//! signals it can catch: SIGKILL to the launcher leaves the binary running
//! (an app server that outlives the run, holding its socket and its log).
//! So the app server runs in a process group of its own, told to stop as a
//! group, and the UI, which must stay in the terminal's group, is asked to
//! stop (SIGTERM, which the launcher forwards) before it is killed.
//!
//! When this process dies without a word (SIGKILL, which nothing catches:
//! `kill -9`, the OOM killer), a watcher in the app server's group kills
//! the group ([`Group::led_by`]); the UI, its app server gone, ends.

use tokio::process::{Child, Command};

use crate::hook::GRACE;

/// A child leading a process group of its own (spawned with
/// `process_group(0)`): the group is killed when this is dropped, whatever
/// ended the run (an error, a panic), or when this process dies.
pub struct Group {
    child: Child,
    id: Option<libc::pid_t>,
    /// The write end of the watcher's pipe: it closes when this process
    /// ends, however it ends.
    _lifeline: Option<std::io::PipeWriter>,
}

impl Group {
    /// `child`, spawned as the leader of a new process group, and in that
    /// group a watcher (`/bin/sh`) that waits for the end of a pipe only
    /// this process holds, then kills the group. An app server Codex starts
    /// as a grandchild, past a launcher, goes with it: a signal the
    /// launcher would have to forward (Linux's parent-death signal) does
    /// not reach it, nor stops an app server busy with a turn (it drains
    /// the turn first, and the turn waits for an answer).
    pub fn led_by(child: Child) -> std::io::Result<Group> {
        let id = child.id().map(|pid| pid as libc::pid_t);
        let mut group = Group {
            child,
            id,
            _lifeline: None,
        };
        let Some(id) = id else {
            // Already ended and reaped: nothing to watch.
            return Ok(group);
        };
        // Both ends are close-on-exec: neither Codex process holds the
        // write end, so only this process's end closes it.
        let (end, lifeline) = std::io::pipe()?;
        Command::new("/bin/sh")
            .args(["-c", "read _; kill -9 0"])
            .stdin(end)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(id)
            .spawn()?;
        group._lifeline = Some(lifeline);
        Ok(group)
    }

    /// The leader, to wait on.
    pub fn leader(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Tells every process of the group to stop (SIGTERM), waits up to
    /// [`GRACE`] for the leader, then kills what is left of the group.
    pub async fn end(mut self) {
        self.signal(libc::SIGTERM);
        let _ = tokio::time::timeout(GRACE, self.child.wait()).await;
        // Dropped: the rest of the group is killed.
    }

    fn signal(&self, signal: libc::c_int) {
        if let Some(group) = self.id {
            // SAFETY: a plain system call on a process group we made; a
            // group already gone is ESRCH, which is fine.
            unsafe { libc::killpg(group, signal) };
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.start_kill();
    }
}
