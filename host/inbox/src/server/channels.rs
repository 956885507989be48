//! Running the two-way channels: on one user's inbox, for as long as it
//! serves; on a team's, on one server at a time, the one holding the
//! channel's lease (a Telegram bot's updates must be taken by one
//! consumer; a Slack app's events go to one connection): when that server
//! goes, or its hold is lost, another takes the channel over, and reads
//! what it kept from the store they share.

use std::sync::Arc;

use crate::notify::Backoff;
use crate::notify::TwoWay;
use crate::store::TeamStore;

use super::Inbox;

/// Runs `channel` for `inbox`; with a team's `store`, only while this
/// server holds the channel's lease.
pub(super) async fn run(
    inbox: Arc<Inbox>,
    channel: Arc<dyn TwoWay>,
    store: Option<Arc<dyn TeamStore>>,
) {
    let name = channel.name();
    let Some(store) = store else {
        return channel.run(inbox).await;
    };
    let lease = format!("channel {name}");
    let mut backoff = Backoff::new();
    loop {
        let held = match store.hold(&lease).await {
            Ok(held) => held,
            Err(error) => {
                let wait = backoff.failed();
                tracing::warn!(channel = name, %error, ?wait, "the inbox cannot take its channel's lease");
                tokio::time::sleep(wait).await;
                continue;
            }
        };
        backoff.reset();
        tracing::info!(channel = name, "this server runs the channel");
        tokio::select! {
            () = channel.clone().run(inbox.clone()) => return,
            () = held => tracing::warn!(
                channel = name,
                "this server lost the channel's lease: it stops the channel until it holds it again"
            ),
        }
    }
}
