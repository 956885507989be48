//! A team's inbox server hears of every question asked or settled by any
//! server, and of every token revoked: one connection per server process listens on [`CHANNEL`] (not
//! one per waiter), and each announcement (a question's id only: the
//! database stays the truth) is passed on, to wake the waiters of that
//! question, who read it again, and to tell the pages. A lost connection
//! is passed on as "anything may have changed" (an announcement may have
//! been lost with it), and is made again.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use crate::store::PgStore;
use crate::store::postgres::CHANNEL;

/// How long to wait before listening again after the database refused.
const RETRY: Duration = Duration::from_secs(1);

/// Listens until `closing`, calling `announced` with each question's id
/// announced, and with `None` when announcements may have been lost (the
/// connection was made again).
pub async fn listen(
    store: Arc<PgStore>,
    closing: CancellationToken,
    announced: impl Fn(Option<&str>),
) {
    let wake = || announced(None);
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
                // An empty announcement (a token revoked): anything may have changed.
                Ok(Some(notification)) => {
                    announced(Some(notification.payload()).filter(|id| !id.is_empty()))
                }
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
