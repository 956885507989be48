//! A team's inbox server wakes its waiting agents when another server
//! settles their question: one connection per server process listens on
//! [`CHANNEL`] (not one per waiter), and each announcement (a question's id
//! only: the database stays the truth) wakes the waiters of that question,
//! who read it again. A lost connection wakes every waiter (an
//! announcement may have been lost with it), and is made again.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use crate::store::PgStore;
use crate::store::postgres::CHANNEL;
use crate::waiters::Waiters;

/// How long to wait before listening again after the database refused.
const RETRY: Duration = Duration::from_secs(1);

/// Listens until `closing`, waking the waiters of each question announced,
/// and every waiter when the connection was lost.
pub async fn listen(store: Arc<PgStore>, waiters: Arc<Waiters>, closing: CancellationToken) {
    let wake = || waiters.wake_all();
    loop {
        let mut listener = match PgListener::connect_with(store.pool()).await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::warn!(%error, "the inbox cannot listen for other servers' answers");
                tokio::select! {
                    () = tokio::time::sleep(RETRY) => continue,
                    () = closing.cancelled() => return,
                }
            }
        };
        if let Err(error) = listener.listen(CHANNEL).await {
            tracing::warn!(%error, "the inbox cannot listen for other servers' answers");
            tokio::select! {
                () = tokio::time::sleep(RETRY) => continue,
                () = closing.cancelled() => return,
            }
        }
        // Listening again: whatever was announced meanwhile is read now.
        wake();
        loop {
            let received = tokio::select! {
                received = listener.try_recv() => received,
                () = closing.cancelled() => return,
            };
            match received {
                Ok(Some(notification)) => waiters.wake(notification.payload()),
                // The connection was lost: listen again (the listener
                // connects anew on the next call).
                Ok(None) => {
                    tracing::warn!("the inbox's listening connection was lost; listening again");
                    wake();
                }
                Err(error) => {
                    tracing::warn!(%error, "the inbox's listening connection failed");
                    wake();
                    break;
                }
            }
        }
    }
}
