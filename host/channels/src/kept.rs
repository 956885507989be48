//! [`Kept`]: what a channel keeps in the inbox's store.

use serde::Serialize;
use serde::de::DeserializeOwned;

use ask_user_inbox::notify::{Backoff, ChannelHost};
use ask_user_inbox::store::StoreError;

/// A channel's state, kept as JSON in the inbox's store: written whole,
/// so that a crash leaves the old state or the new one.
pub struct Kept {
    name: &'static str,
}

impl Kept {
    pub fn new(name: &'static str) -> Self {
        Kept { name }
    }

    /// What was kept; nothing kept yet, or a state that cannot be read
    /// (logged), is the default.
    pub async fn load<T: DeserializeOwned + Default>(
        &self,
        host: &dyn ChannelHost,
    ) -> Result<T, StoreError> {
        let Some(text) = host.kept(self.name).await? else {
            return Ok(T::default());
        };
        Ok(serde_json::from_str(&text).unwrap_or_else(|error| {
            tracing::warn!(channel = self.name, %error, "a channel's state could not be read; it starts again");
            T::default()
        }))
    }

    /// What was kept, reading again (after a backoff) while the store
    /// cannot be read.
    pub async fn load_surely<T: DeserializeOwned + Default>(&self, host: &dyn ChannelHost) -> T {
        let mut backoff = Backoff::new();
        loop {
            match self.load(host).await {
                Ok(state) => return state,
                Err(error) => {
                    let wait = backoff.failed();
                    tracing::warn!(channel = self.name, %error, ?wait, "what a channel kept cannot be read; trying again");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Keeps `state`, trying again (after a backoff) until the store takes
    /// it: what was taken is confirmed to the service only once it is kept.
    pub async fn save_surely<T: Serialize>(&self, host: &dyn ChannelHost, state: &T) {
        let mut backoff = Backoff::new();
        while let Err(error) = self.save(host, state).await {
            let wait = backoff.failed();
            tracing::warn!(channel = self.name, %error, ?wait, "a channel's state could not be kept; trying again");
            tokio::time::sleep(wait).await;
        }
    }

    /// Keeps `state`.
    pub async fn save<T: Serialize>(
        &self,
        host: &dyn ChannelHost,
        state: &T,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(state).map_err(StoreError::backend)?;
        host.keep(self.name, text).await
    }
}
