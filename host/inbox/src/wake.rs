//! A team's inbox server wakes its waiting agents when another server
//! settles their question: one connection per server process listens on
//! [`CHANNEL`] (not one per waiter), and each announcement (a question's id
//! only: the database stays the truth) moves the server's change counter
//! on, so that every waiter reads its question again. A lost connection
//! moves it on too (an announcement may have been lost with it), and is
//! made again.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::store::PgStore;
use crate::store::postgres::CHANNEL;

/// How long to wait before listening again after the database refused.
const RETRY: Duration = Duration::from_secs(1);

/// Listens until `closing`, moving `changed` on at every announcement and
/// every lost connection.
pub async fn listen(store: Arc<PgStore>, changed: watch::Sender<u64>, closing: CancellationToken) {
    let wake = || changed.send_modify(|n| *n += 1);
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
                Ok(Some(_)) => wake(),
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
