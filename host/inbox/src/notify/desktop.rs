//! `desktop = true`: a freedesktop notification over the session's D-Bus,
//! with a one-time link to the page (it stays on this machine). Its body's
//! text is escaped for the markup some notification servers read.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{Channel, ChannelKind, Configured, Note};

pub(super) struct Desktop;

impl ChannelKind for Desktop {
    fn name(&self) -> &'static str {
        "desktop"
    }

    fn configure(&self, value: &toml::Value) -> Result<Configured, String> {
        match value.as_bool() {
            Some(true) => Ok(Configured::Notifies(Arc::new(DesktopChannel))),
            Some(false) => Ok(Configured::Off),
            None => Err(format!("{value} is not true or false")),
        }
    }
}

#[derive(Debug)]
struct DesktopChannel;

impl Channel for DesktopChannel {
    fn name(&self) -> &'static str {
        "desktop"
    }

    fn local(&self) -> bool {
        true
    }

    fn send(
        &self,
        note: Arc<Note>,
        _http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
        Box::pin(async move {
            let link = note.link.clone().unwrap_or_else(|| note.address.clone());
            let body = format!("{}\n{link}", ask_user_seam::text::markup(&note.text));
            notify_rust::Notification::new()
                .appname("ask-user")
                .summary("An agent is waiting for your answer")
                .body(&body)
                .show_async()
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }
}
