//! Expiring the questions whose agents have been gone past the retention
//! period.

use std::sync::Arc;
use std::time::Duration;

use crate::store::State as QuestionState;

use super::Inbox;
use super::pages::departure;

/// Expires the questions whose agent has been gone past the retention
/// period: every minute (or tenth of the period), once this server has
/// served for a whole period (an inbox that was not running cannot tell an
/// agent that is gone from one that could not reach it). It writes only
/// what expires.
pub(super) async fn sweep(inbox: Arc<Inbox>) {
    let retention = inbox.retention;
    let every = (retention / 10).clamp(Duration::from_millis(100), Duration::from_secs(60));
    tokio::time::sleep(retention).await;
    loop {
        // An agent in the middle of a wait is here, however short the
        // period: on this server, attached; on another of a team's, seen
        // within the longest wait (each wait writes its start).
        let attached = inbox.waiters.attached();
        let before = crate::now() - inbox.mode.expires_after(retention);
        match inbox.store.expire(before, crate::now(), attached).await {
            Ok(expired) => {
                for id in expired {
                    inbox.left(&id, departure(&id, QuestionState::Expired, None, None));
                }
            }
            Err(error) => tracing::warn!(%error, "the inbox could not expire old questions"),
        }
        tokio::time::sleep(every).await;
    }
}
