//! A team's notifications, sent once per question across all its servers:
//! every server looks at the database's outbox every [`EVERY`], claims the
//! notices due (rows no other server holds), sends them, and marks them
//! sent. A question still waiting past `[inbox.escalate] after` gets a
//! second notice on the escalation's channels. A server that dies between
//! its claim and its send leaves the notice to another after
//! [`CLAIM_LEASE`]; each notice is sent on its own, so a slow channel
//! delays no other, and within its lease, so a live server's notices go
//! once. One that dies
//! after sending but before marking it sent makes it go twice (at least
//! once, never lost).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::notify::{NOTIFY_TIMEOUT, Notifier};
use crate::store::State;
use crate::store::team::{CLAIM_LEASE, Notice, Outbox};

/// How often a server looks at the outbox.
const EVERY: Duration = Duration::from_secs(1);

/// The most notices a server claims at once.
const BATCH: i64 = 16;

/// Sends the team's due notices until `closing`.
pub async fn dispatch(store: Arc<dyn Outbox>, notifier: Arc<Notifier>, closing: CancellationToken) {
    let me = match ask_user_seam::secret::id("server-") {
        Ok(id) => id,
        Err(error) => {
            tracing::warn!(%error, "the inbox cannot name itself; it sends no notifications");
            return;
        }
    };
    loop {
        if let Err(error) = round(&store, &notifier, &me).await {
            tracing::warn!(%error, "the inbox could not send its notifications");
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            () = closing.cancelled() => return,
        }
    }
}

async fn round(
    store: &Arc<dyn Outbox>,
    notifier: &Arc<Notifier>,
    me: &str,
) -> Result<(), crate::store::StoreError> {
    let now = crate::now();
    if let Some(after) = notifier.escalates_after() {
        store.escalate(now - after.as_millis() as i64, now).await?;
    }
    // Each notice claimed goes on a task of its own, and the next round
    // does not wait for them: a slow channel holds up no other notice, and
    // each is sent within NOTIFY_TIMEOUT, well inside its claim's lease, so
    // that no other server takes it for abandoned and sends it again.
    let asked_before = now - notifier.after().as_millis() as i64;
    for (record, notice) in store.claim_notices(me, now, asked_before, BATCH).await? {
        let (store, notifier, me) = (store.clone(), notifier.clone(), me.to_owned());
        tokio::spawn(async move {
            // A question answered meanwhile needs no notice.
            if record.state == State::Waiting {
                notifier
                    .deliver(&record, notice == Notice::Escalated, || None)
                    .await;
            }
            if let Err(error) = store
                .notice_sent(&me, &record.id, notice, crate::now())
                .await
            {
                tracing::warn!(%error, id = record.id, "the inbox could not mark a notice sent; it may go again");
            }
        });
    }
    Ok(())
}

const _: () = assert!(
    NOTIFY_TIMEOUT.as_millis() * 2 < CLAIM_LEASE as u128,
    "a notice is sent well within its claim"
);
