//! `webhook = "https://…"`: JSON with `text` (Slack's incoming webhooks take
//! it; escaped for Slack's mrkdwn, so the model's words mention nobody and
//! link nowhere) and the details as data: `id`, `session`, `agent`, `cwd`,
//! `questions`, `url` (the page's address without any way in).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::json;

use super::{Channel, ChannelKind, Configured, Note};

pub(super) struct Webhook;

impl ChannelKind for Webhook {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn configure(&self, value: &toml::Value) -> Result<Configured, String> {
        Ok(Configured::Notifies(Arc::new(WebhookChannel {
            url: super::url(value)?,
        })))
    }
}

#[derive(Debug)]
struct WebhookChannel {
    url: String,
}

impl Channel for WebhookChannel {
    fn name(&self) -> &'static str {
        "webhook"
    }

    fn send(
        &self,
        note: Arc<Note>,
        http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> {
        let record = &note.record;
        let body = json!({
            "text": format!(
                "An agent is waiting for your answer: {}\n{}",
                ask_user_seam::text::slack(&note.text),
                note.address
            ),
            "id": record.id,
            "session": record.session,
            "agent": record.agent,
            "cwd": record.cwd,
            "questions": note.questions(),
            "url": note.address,
        });
        let request = http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body.to_string());
        Box::pin(async move { super::sent(request).await.map_err(|f| f.to_string()) })
    }
}
