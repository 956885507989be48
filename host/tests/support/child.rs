//! A server process a test started: signalled, and waited for with a bound.

use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Sends `child` `signal`.
pub fn signal(child: &Child, signal: libc::c_int) {
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// Waits, at most `wait`, for `output` (fed by a thread reading the
/// child's output) to close, passing over what still comes, then for the
/// child to exit; `None` when it is still running.
pub fn exit<T>(
    child: &mut Child,
    output: &mpsc::Receiver<T>,
    wait: Duration,
) -> Option<ExitStatus> {
    let start = Instant::now();
    while let Some(left) = wait.checked_sub(start.elapsed()) {
        match output.recv_timeout(left) {
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => return None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Some(child.wait().unwrap()),
        }
    }
    None
}
