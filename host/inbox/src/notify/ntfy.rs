//! `ntfy = "https://ntfy.sh/your-topic"`: the question as plain text (no
//! markdown: ntfy reads none unless asked), control characters dropped, with
//! `Title` and `Click` headers; the page's address without any way in.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{Channel, ChannelKind, Configured, Note};

pub(super) struct Ntfy;

impl ChannelKind for Ntfy {
    fn name(&self) -> &'static str {
        "ntfy"
    }

    fn configure(&self, value: &toml::Value) -> Result<Configured, String> {
        Ok(Configured::Notifies(Arc::new(NtfyChannel {
            topic: super::url(value)?,
        })))
    }
}

#[derive(Debug)]
struct NtfyChannel {
    topic: String,
}

impl Channel for NtfyChannel {
    fn name(&self) -> &'static str {
        "ntfy"
    }

    fn send(
        &self,
        note: Arc<Note>,
        http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
        let request = http
            .post(&self.topic)
            .header("Title", "ask-user: an agent is waiting")
            .header("Click", &note.address)
            .header("Tags", "question")
            .body(format!(
                "{}\n{}",
                ask_user_seam::text::clean(&note.text, true),
                note.address
            ));
        Box::pin(super::sent(request))
    }
}
