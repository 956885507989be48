//! How a command learns that it should stop.

use tokio_util::sync::CancellationToken;

/// The turn's signal of a command that asks: cancelled when the process is
/// asked to stop ([`stop_requested`]).
pub fn stop_signal() -> CancellationToken {
    let signal = CancellationToken::new();
    let interrupt = signal.clone();
    let stop = stop_requested();
    tokio::spawn(async move {
        stop.await;
        interrupt.cancel();
    });
    signal
}

/// Resolves when the process is asked to stop: Ctrl-C (SIGINT), SIGTERM (a
/// service manager, `kill`) or SIGHUP (its terminal went away). Each is
/// taken from the moment this is called, so the command then ends as it
/// does on Ctrl-C: open questions withdrawn, answerers and their children
/// stopped, the result printed.
pub fn stop_requested() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut signals: Vec<_> = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ]
    .into_iter()
    .filter_map(|kind| signal(kind).ok())
    .collect();
    async move {
        if signals.is_empty() {
            return std::future::pending().await;
        }
        let received = signals.iter_mut().map(|s| Box::pin(s.recv()));
        futures_util::future::select_all(received).await;
    }
}
