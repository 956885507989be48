//! Ending Codex's processes whole. Codex installed from npm is a Node
//! launcher that runs the native binary as its child and forwards only the
//! signals it can catch: SIGKILL to the launcher leaves the binary running
//! (an app server that outlives the run, holding its socket and its log).
//! So the app server runs in a process group of its own, told to stop as a
//! group, and the UI, which must stay in the terminal's group, is asked to
//! stop (SIGTERM, which the launcher forwards) before it is killed.

use std::time::Duration;

use tokio::process::Child;

/// How long a process told to stop (SIGTERM) has before it is killed.
pub const GRACE: Duration = Duration::from_secs(3);

/// A child leading a process group of its own (spawned with
/// `process_group(0)`): the group is killed when this is dropped, whatever
/// ended the run (an error, a panic).
pub struct Group {
    child: Child,
    id: Option<libc::pid_t>,
}

impl Group {
    /// `child`, spawned as the leader of a new process group.
    pub fn led_by(child: Child) -> Group {
        let id = child.id().map(|pid| pid as libc::pid_t);
        Group { child, id }
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

/// Ends `child` (in the terminal's process group): SIGTERM, which a
/// launcher forwards to what it runs, then after [`GRACE`] SIGKILL.
pub async fn end_gently(child: &mut Child) {
    if let Some(pid) = child.id() {
        // SAFETY: a plain system call on our own child, not yet reaped.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}
