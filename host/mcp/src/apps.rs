//! The form as an MCP App (the `io.modelcontextprotocol/ui` extension), for
//! a client that renders apps but declared no elicitation form.
//!
//! To such a client, `ask_user_question` names the app's page
//! ([`FORM_URI`], a resource of this server) in its `_meta.ui`. The client
//! shows the page beside the call and hands it the call's arguments; the
//! page fetches the form of the question waiting for those arguments
//! ([`FORM_TOOL`]) and sends the person's answers back ([`ANSWER_TOOL`]).
//! Both tools are for the app alone (`visibility: ["app"]`), listed only to
//! a client that declared the extension, which binds it to keep them from
//! its model; a client that did not declare it can call neither.
//!
//! While the app shows the form, the rest of the call's chain (the inbox,
//! a page, a phone) is asked too, and the first answer wins. Answers the
//! questions would refuse are said back to the app, and the form stays
//! open with what the person typed; nothing is sent until they fit.
//!
//! The form is the one an elicitation client gets ([`Form`], with lists and
//! a last text field), so its fields mean the same everywhere. A question
//! is found by a key of its call's arguments (keyed by this server's
//! secret, [`crate::keys`]), and answered with a ticket: a fresh secret
//! handed to the app that fetched that question's form.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ask_user_seam::{Answer, AnswerError, AnswerFuture, Answerer, Ask, ErrorCode, Next, validate};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ClientCapabilities, ContentBlock, JsonObject, MetaObject,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, Tool,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc, oneshot};

use ask_user_answerers::form::{self, Form, Renders};

/// The extension's id, in a client's `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The media type of an app's page.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The app's page: the form of the call it is shown beside.
pub const FORM_URI: &str = "ui://ask-user/form";

/// The app's tool that fetches the form of the question waiting for a
/// call's arguments.
pub const FORM_TOOL: &str = "ask_user_form";

/// The app's tool that sends the person's answers (or their dismissal).
pub const ANSWER_TOOL: &str = "ask_user_answer";

/// The page itself: no script or style from elsewhere, no network.
const PAGE: &str = include_str!("app/form.html");

/// How long the app's fetch waits for its call's question to reach the
/// form (it may still be on its way through the chain, or be asked
/// elsewhere first); the app asks again after it.
const FETCH_WAIT: Duration = Duration::from_secs(20);

/// What the app's form shows: lists, and a text field last.
const RENDERS: Renders = Renders {
    arrays: true,
    text_last: true,
};

/// Whether a client with `capabilities` renders this server's app: it
/// declared the extension, with no media types or with [`MIME_TYPE`].
pub fn declared(capabilities: Option<&ClientCapabilities>) -> bool {
    let Some(ui) = capabilities
        .and_then(|c| c.extensions.as_ref())
        .and_then(|extensions| extensions.get(EXTENSION))
    else {
        return false;
    };
    match ui.get("mimeTypes") {
        None => true,
        Some(Value::Array(types)) => types.iter().any(|t| t == MIME_TYPE),
        Some(_) => false,
    }
}

/// `tool` naming the app's page, as a client that renders apps reads it
/// (`_meta.ui.resourceUri`, and the older `_meta["ui/resourceUri"]`).
pub fn shown_with_the_form(tool: &Tool) -> Tool {
    let mut meta = tool.meta.clone().unwrap_or_default();
    meta.0.insert(
        "ui".into(),
        json!({"resourceUri": FORM_URI, "visibility": ["model", "app"]}),
    );
    meta.0.insert("ui/resourceUri".into(), json!(FORM_URI));
    tool.clone().with_meta(meta)
}

/// Whether `name` is one of the app's tools.
pub fn is_app_tool(name: &str) -> bool {
    [FORM_TOOL, ANSWER_TOOL].contains(&name)
}

/// The app's two tools, hidden from the model.
pub fn tools() -> [Tool; 2] {
    let schema = |schema: Value| match schema {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("a schema literal is an object"),
    };
    let for_the_app = |tool: Tool| {
        let mut meta = JsonObject::new();
        meta.insert("ui".into(), json!({"visibility": ["app"]}));
        tool.with_meta(MetaObject(meta))
    };
    [
        for_the_app(Tool::new(
            FORM_TOOL,
            "For ask-user's form app only: the form of the question waiting for a call's \
             arguments, and the ticket that answers it.",
            schema(json!({
                "type": "object",
                "properties": {"arguments": {"type": "object"}},
                "required": ["arguments"],
            })),
        )),
        for_the_app(Tool::new(
            ANSWER_TOOL,
            "For ask-user's form app only: the person's answers to a form (or its dismissal).",
            schema(json!({
                "type": "object",
                "properties": {
                    "ticket": {"type": "string"},
                    "action": {"enum": ["accept", "decline"]},
                    "content": {"type": "object"},
                },
                "required": ["ticket", "action"],
            })),
        )),
    ]
}

/// The app's page, as `resources/list` shows it.
pub fn resource() -> Resource {
    Resource::new(FORM_URI, "ask-user form")
        .with_title("Questions for you")
        .with_description("The form of an ask_user_question call, shown beside it.")
        .with_mime_type(MIME_TYPE)
}

/// The app's page, read.
pub fn read(request: &ReadResourceRequestParams) -> Result<ReadResourceResult, McpError> {
    if request.uri != FORM_URI {
        return Err(McpError::resource_not_found(
            format!(
                "there is no resource {:?}; this server has {FORM_URI:?}",
                request.uri
            ),
            None,
        ));
    }
    let mut meta = JsonObject::new();
    // No `csp` domains: the page loads nothing and connects nowhere.
    meta.insert("ui".into(), json!({"prefersBorder": true}));
    Ok(ReadResourceResult::new(vec![
        ResourceContents::TextResourceContents {
            uri: FORM_URI.to_owned(),
            mime_type: Some(MIME_TYPE.to_owned()),
            text: PAGE.to_owned(),
            meta: Some(MetaObject(meta)),
        },
    ]))
}

/// What the app sent for a form.
enum Reply {
    /// The form's content, to be read as answers.
    Accept(Map<String, Value>),
    /// The person dismissed the questions.
    Decline,
}

/// A reply on its way to the form's answerer, with where its verdict goes
/// (the words the app shows when the answers do not fit).
struct Submission {
    reply: Reply,
    verdict: oneshot::Sender<Result<(), String>>,
}

/// A form waiting for the app.
struct Open {
    /// The key of the call's arguments.
    call: String,
    ticket: String,
    /// `{message, requestedSchema}`, as elicitation carries a form.
    form: Value,
    /// Handed to an app already (a second app, or a reload, gets it too
    /// when no other form of the call is waiting).
    fetched: bool,
    submit: mpsc::Sender<Submission>,
}

/// The forms waiting for an app, in the order they were asked: one
/// server's, shared by its sessions (a ticket is a secret; a call's id
/// needs this server's key).
#[derive(Clone, Default)]
pub struct AppForms {
    open: Arc<Mutex<Vec<Open>>>,
    changed: Arc<Notify>,
}

impl AppForms {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Open>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens `form` for a call of the arguments keyed `call`; it waits
    /// until the guard drops.
    fn open(
        &self,
        call: &str,
        form: Value,
    ) -> std::io::Result<(Opened, mpsc::Receiver<Submission>)> {
        let ticket = ask_user_seam::secret::token()?;
        let (submit, submissions) = mpsc::channel(4);
        self.lock().push(Open {
            call: call.to_owned(),
            ticket: ticket.clone(),
            form,
            fetched: false,
            submit,
        });
        self.changed.notify_waiters();
        let opened = Opened {
            forms: self.clone(),
            ticket,
        };
        Ok((opened, submissions))
    }

    /// The ticket and form of a question of the arguments keyed `call`, once
    /// one waits (one not handed to an app yet first); `None` after `wait`.
    async fn fetch(&self, call: &str, wait: Duration) -> Option<(String, Value)> {
        let found = async {
            loop {
                let changed = self.changed.notified();
                if let Some(found) = self.take(call) {
                    return found;
                }
                changed.await;
            }
        };
        tokio::time::timeout(wait, found).await.ok()
    }

    fn take(&self, call: &str) -> Option<(String, Value)> {
        let mut open = self.lock();
        let index = open
            .iter()
            .position(|o| o.call == call && !o.fetched)
            .or_else(|| open.iter().position(|o| o.call == call))?;
        let form = &mut open[index];
        form.fetched = true;
        Some((form.ticket.clone(), form.form.clone()))
    }

    /// Gives `reply` to the form of `ticket` and returns its verdict: `Err`
    /// with the words for the person when the answers do not fit (the form
    /// stays open), or when no form of that ticket waits.
    async fn submit(&self, ticket: &str, reply: Reply) -> Result<(), String> {
        let gone = || {
            "this question is no longer waiting: it was answered or dismissed elsewhere, or \
             its agent stopped waiting"
                .to_owned()
        };
        let submit = self
            .lock()
            .iter()
            .find(|o| o.ticket == ticket)
            .map(|o| o.submit.clone())
            .ok_or_else(gone)?;
        let (verdict, said) = oneshot::channel();
        submit
            .send(Submission { reply, verdict })
            .await
            .map_err(|_| gone())?;
        said.await.map_err(|_| gone())?
    }
}

/// A form open for the app, closed when dropped (its call ended).
struct Opened {
    forms: AppForms,
    ticket: String,
}

impl Drop for Opened {
    fn drop(&mut self) {
        self.forms.lock().retain(|o| o.ticket != self.ticket);
    }
}

/// Answers a call's batch with the form in the client's app, while the rest
/// of the chain is asked too: the first answer wins.
pub struct AppAnswerer {
    forms: AppForms,
    /// The key of the call's arguments.
    call: String,
}

impl AppAnswerer {
    pub fn new(forms: AppForms, call: String) -> Self {
        AppAnswerer { forms, call }
    }
}

impl Answerer for AppAnswerer {
    fn name(&self) -> &str {
        "app"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let form = Form::new(&ask.request, RENDERS).asked_by(ask.asked_by_label());
            let shown = json!({"message": form.message(), "requestedSchema": form.schema()});
            let (_opened, mut submissions) = self
                .forms
                .open(&self.call, shown)
                .map_err(AnswerError::other)?;
            let mut rest = std::pin::pin!(next.run_beside());
            // Nobody else can answer: the app alone then.
            let mut alone = false;
            loop {
                tokio::select! {
                    result = &mut rest, if !alone => match result {
                        Err(AnswerError::Seam(error))
                            if error.code() == Some(&ErrorCode::NoProvider) => alone = true,
                        settled => return settled,
                    },
                    submission = submissions.recv() => {
                        // Its sender stays in the list while `_opened` lives.
                        let Some(Submission { reply, verdict }) = submission else {
                            return Err(AnswerError::other("the app's form was closed"));
                        };
                        match settle(&form, ask, reply) {
                            Ok(settled) => {
                                let _ = verdict.send(Ok(()));
                                return settled;
                            }
                            Err(words) => {
                                let _ = verdict.send(Err(words));
                            }
                        }
                    }
                }
            }
        })
    }
}

/// What the app's reply settles (the answers, or the dismissal), or the
/// words the person is shown when the answers do not fit: the form stays
/// open for answers that do.
fn settle(
    form: &Form<'_>,
    ask: &Ask,
    reply: Reply,
) -> Result<Result<Vec<Answer>, AnswerError>, String> {
    match reply {
        Reply::Decline => Ok(Err(form::dismissed("dismissed").into())),
        Reply::Accept(content) => {
            let answers = form.answers(&content).map_err(|e| e.message().to_owned())?;
            validate::check_given_answers(&ask.request, &answers)
                .map_err(|e| e.message().to_owned())?;
            Ok(Ok(answers))
        }
    }
}

/// The arguments of [`FORM_TOOL`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fetch {
    arguments: JsonObject,
}

/// The arguments of [`ANSWER_TOOL`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Send {
    ticket: String,
    action: Action,
    #[serde(default)]
    content: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    Accept,
    Decline,
}

/// A call of one of the app's tools, `name`, with `arguments`; `key_of`
/// gives the key of a call's arguments. A refusal is a tool error the app
/// shows, in words for the person.
pub async fn call(
    forms: &AppForms,
    name: &str,
    arguments: JsonObject,
    key_of: impl FnOnce(&Value) -> String,
) -> Result<CallToolResult, McpError> {
    let refused = |words: String| CallToolResult::error(vec![ContentBlock::text(words)]);
    let invalid = |e: serde_json::Error| {
        McpError::invalid_params(format!("the arguments of {name} do not fit: {e}"), None)
    };
    let arguments = Value::Object(arguments);
    if name == FORM_TOOL {
        let Fetch { arguments } = serde_json::from_value(arguments).map_err(invalid)?;
        let call = key_of(&Value::Object(arguments));
        return Ok(match forms.fetch(&call, FETCH_WAIT).await {
            Some((ticket, form)) => {
                let mut found = CallToolResult::success(vec![ContentBlock::text(
                    "The form is in structuredContent.",
                )]);
                found.structured_content = Some(json!({"ticket": ticket, "form": form}));
                found
            }
            None => refused(
                "no question waits here for these arguments yet: it may be asked elsewhere \
                 first, or already be settled"
                    .to_owned(),
            ),
        });
    }
    let Send {
        ticket,
        action,
        content,
    } = serde_json::from_value(arguments).map_err(invalid)?;
    let reply = match action {
        Action::Accept => Reply::Accept(content),
        Action::Decline => Reply::Decline,
    };
    Ok(match forms.submit(&ticket, reply).await {
        Ok(()) => CallToolResult::success(vec![ContentBlock::text("Sent.")]),
        Err(words) => refused(words),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capabilities(ui: Value) -> ClientCapabilities {
        serde_json::from_value(json!({"extensions": {EXTENSION: ui}})).unwrap()
    }

    #[test]
    fn a_client_renders_the_app_only_when_it_declared_the_extension_for_html() {
        assert!(declared(Some(&capabilities(json!({})))));
        assert!(declared(Some(&capabilities(
            json!({"mimeTypes": ["text/plain", MIME_TYPE]})
        ))));
        assert!(!declared(Some(&capabilities(
            json!({"mimeTypes": ["text/plain"]})
        ))));
        assert!(!declared(Some(&ClientCapabilities::default())));
        assert!(!declared(None));
    }

    #[tokio::test]
    async fn a_ticket_answers_only_its_own_open_form() {
        let forms = AppForms::default();
        let (opened, mut submissions) = forms.open("call-1", json!({"form": 1})).unwrap();
        let fetched = forms.fetch("call-1", Duration::ZERO).await;
        let (ticket, form) = fetched.expect("the call's form waits");
        assert_eq!(form, json!({"form": 1}));
        assert!(forms.fetch("call-2", Duration::ZERO).await.is_none());
        assert!(forms.submit("forged", Reply::Decline).await.is_err());

        let answering = tokio::spawn(async move {
            let Submission { verdict, .. } = submissions.recv().await.unwrap();
            verdict.send(Err("does not fit".into())).unwrap();
            submissions
        });
        let said = forms.submit(&ticket, Reply::Decline).await;
        assert_eq!(said, Err("does not fit".to_owned()));
        drop(answering.await.unwrap());

        drop(opened);
        let gone = forms.submit(&ticket, Reply::Decline).await.unwrap_err();
        assert!(gone.contains("no longer waiting"), "{gone}");
    }

    #[tokio::test]
    async fn a_fetch_waits_for_its_calls_form_and_prefers_one_not_handed_out() {
        let forms = AppForms::default();
        let waiting = tokio::spawn({
            let forms = forms.clone();
            async move { forms.fetch("call-1", Duration::from_secs(30)).await }
        });
        // Whenever the fetch started, the form opened after it is found.
        tokio::task::yield_now().await;
        let (_first, _s1) = forms.open("call-1", json!(1)).unwrap();
        let (ticket, _) = waiting.await.unwrap().expect("found once opened");
        let (_second, _s2) = forms.open("call-1", json!(2)).unwrap();
        let (other, form) = forms.fetch("call-1", Duration::ZERO).await.unwrap();
        assert_ne!(ticket, other);
        assert_eq!(form, json!(2));
    }
}
