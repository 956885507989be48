//! `webhook = "https://…"`: JSON with `text` (Slack's incoming webhooks take
//! it; escaped for Slack's mrkdwn, so the model's words mention nobody and
//! link nowhere) and the details as data: `id`, `session`, `agent`, `cwd`,
//! `questions`, `url` (the page's address without any way in).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::json;

use ask_user_inbox::notify::{Channel, ChannelError, ChannelKind, Configured, Note};

use crate::http::{self, HttpUrl};

pub struct Webhook;

impl ChannelKind for Webhook {
    const NAME: &'static str = "webhook";
    const TITLE: &'static str = "a webhook";
    type Config = HttpUrl;

    fn configure(&self, HttpUrl(url): HttpUrl) -> Result<Configured, ChannelError> {
        Ok(Configured::Notifies(Arc::new(WebhookChannel { url })))
    }
}

#[derive(Debug)]
struct WebhookChannel {
    url: String,
}

impl Channel for WebhookChannel {
    fn name(&self) -> &'static str {
        Webhook::NAME
    }

    fn send(
        &self,
        note: Arc<Note>,
        http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), ChannelError>> + Send>> {
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
        Box::pin(http::sent(request))
    }
}
