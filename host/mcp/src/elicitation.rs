//! The `elicitation` answerer: the MCP client's own form, in the client's
//! UI, one form per batch.

use std::sync::Mutex;

use ask_user_seam::{AnswerError, AnswerFuture, Answerer, Ask, AskError, ErrorCode, Next};
use rmcp::Peer;
use rmcp::model::{
    ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestHandle, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit};
use serde_json::Value;

use crate::FORM_KEY;
use crate::stdio::{Dropped, MAX_MESSAGE_BYTES};
use ask_user_answerers::Page;
use ask_user_answerers::form::{self, Form, Renders};

/// The code an ask ends with when the client must fill in a form first
/// (protocol 2026-07-28): the front end answers `input_required` instead.
pub const INPUT_REQUIRED: &str = "INPUT_REQUIRED";

/// How the form reaches the client.
pub enum Channel {
    /// Asked now, with `elicitation/create` (protocols before 2026-07-28).
    Live(Peer<RoleServer>),
    /// Sent to a page, with a URL-mode `elicitation/create`: the client
    /// offers the human the web answerer's address, and the web answerer
    /// (further down the chain) takes the answer from the page. Declining or
    /// closing the offer dismisses the questions. While the offer is open
    /// (and the person on their way), the page waits for them.
    Page { peer: Peer<RoleServer>, page: Page },
    /// Protocol 2026-07-28 has no server-to-client requests.
    Rounds(Box<Rounds>),
    /// The call is a task ([`crate::tasks`]): the form goes in the task's
    /// `inputRequests`, its answer comes in `tasks/update`.
    Task(TaskContext),
}

/// A call of a 2026-07-28 client: a retry carries the client's answer to the
/// form; a first call notes the form wanted.
pub struct Rounds {
    answered: Mutex<Option<ElicitResult>>,
    wanted: Mutex<Option<ElicitRequestParams>>,
}

impl Channel {
    /// A 2026-07-28 call, with the client's answer when it is a retry.
    pub fn rounds(answered: Option<ElicitResult>) -> Self {
        Channel::Rounds(Box::new(Rounds {
            answered: Mutex::new(answered),
            wanted: Mutex::new(None),
        }))
    }
}

/// Answers a batch with one form in the MCP client's UI.
pub struct ElicitationAnswerer {
    channel: Channel,
    /// What the client's form can show.
    renders: Renders,
    /// A message from the client dropped for its size (see [`crate::stdio`]).
    dropped: Dropped,
}

impl ElicitationAnswerer {
    pub fn new(channel: Channel, renders: Renders, dropped: Dropped) -> Self {
        ElicitationAnswerer {
            channel,
            renders,
            dropped,
        }
    }

    /// The form the client must fill in before the call can finish, when an
    /// ask wanted one and had no answer to it.
    pub fn wanted(&self) -> Option<ElicitRequestParams> {
        match &self.channel {
            Channel::Live(_) | Channel::Page { .. } | Channel::Task(_) => None,
            Channel::Rounds(rounds) => rounds.wanted.lock().ok()?.take(),
        }
    }
}

/// The `elicitation/create` parameters for `form`.
fn params(form: &Form) -> Result<ElicitRequestParams, AnswerError> {
    let schema: ElicitationSchema = serde_json::from_value(form.schema())
        .map_err(|e| AnswerError::other(format!("the form could not be built: {e}")))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: form.message(),
        requested_schema: schema,
    })
}

/// What the client's form came back with, as the waterfall takes it.
fn outcome(form: &Form, result: ElicitResult) -> Result<Vec<ask_user_seam::Answer>, AnswerError> {
    let dismissed = |how: &str| Err(form::dismissed(how).into());
    match result.action {
        ElicitationAction::Accept => {
            let content = match result.content {
                Some(Value::Object(content)) => content,
                None => Default::default(),
                Some(_) => {
                    return Err(AskError::new(
                        ErrorCode::InvalidAnswer,
                        "the client's form answer is not an object; it was not passed on. \
                         This is a fault of the MCP client",
                    )
                    .into());
                }
            };
            Ok(form.answers(&content)?)
        }
        ElicitationAction::Decline => dismissed("declined"),
        _ => dismissed("cancelled"),
    }
}

/// The client's reply to an open form or offer was too large to take.
fn too_large() -> AnswerError {
    AskError::new(
        ErrorCode::InvalidAnswer,
        format!(
            "the client sent a message larger than {} MiB, the most this server takes, while \
             the form was open: most likely its answer, which was dropped, and the form with \
             it. Ask again, and ask for shorter answers",
            (MAX_MESSAGE_BYTES + 1) >> 20
        ),
    )
    .into()
}

/// An open `elicitation/create`: cancelled at the client when dropped
/// before its answer came (the turn was aborted or timed out).
struct OpenForm(Option<RequestHandle<RoleServer>>);

impl Drop for OpenForm {
    fn drop(&mut self) {
        if let Some(handle) = self.0.take() {
            tokio::spawn(handle.cancel(Some("the question was withdrawn".to_owned())));
        }
    }
}

impl Answerer for ElicitationAnswerer {
    fn name(&self) -> &str {
        "elicitation"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let form = Form::new(&ask.request, self.renders).asked_by(ask.asked_by_label());
            if let Channel::Page { peer, page } = &self.channel {
                return on_page(peer, page, &self.dropped, &form, next).await;
            }
            let params = params(&form)?;
            match &self.channel {
                Channel::Live(peer) => {
                    let too_big = self.dropped.after_now();
                    let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
                    let handle = match peer
                        .send_cancellable_request(request, PeerRequestOptions::no_options())
                        .await
                    {
                        Ok(handle) => handle,
                        // The connection is gone: nobody is there to answer.
                        Err(_) => return next.run().await,
                    };
                    let mut open = OpenForm(Some(handle));
                    let response = match open.0.as_mut() {
                        Some(handle) => tokio::select! {
                            response = &mut handle.rx => response,
                            // The form is withdrawn as `open` goes.
                            () = too_big => return Err(too_large()),
                        },
                        None => return next.run().await,
                    };
                    open.0 = None;
                    match response {
                        Ok(Ok(ClientResult::ElicitResult(result))) => outcome(&form, result),
                        Ok(Ok(other)) => Err(AnswerError::other(format!(
                            "the client answered the form with {other:?}"
                        ))),
                        // The client cannot elicit after all (or failed): pass.
                        Ok(Err(error)) => {
                            tracing::warn!(%error, "the MCP client did not show the form; passing the question on");
                            next.run().await
                        }
                        Err(_) => next.run().await,
                    }
                }
                Channel::Page { .. } => next.run().await,
                Channel::Task(task) => {
                    let request = InputRequest::Elicitation(ElicitRequest::new(params));
                    match task.request_input(FORM_KEY, request).await {
                        Ok(answer) => match serde_json::from_value(answer) {
                            Ok(result) => outcome(&form, result),
                            Err(e) => Err(AskError::new(
                                ErrorCode::InvalidAnswer,
                                format!(
                                    "the client's answer to the form is not an elicitation \
                                     result ({e}); it was not passed on. This is a fault of the \
                                     MCP client"
                                ),
                            )
                            .into()),
                        },
                        // Cancelled: the call is withdrawn as it ends.
                        Err(TaskExit::Cancelled) => Err(form::dismissed("cancelled").into()),
                        // Asked twice in one call (a key is used once).
                        Err(TaskExit::Error(error)) => {
                            tracing::warn!(%error, "the form could not be put in the task; passing the question on");
                            next.run().await
                        }
                    }
                }
                Channel::Rounds(rounds) => {
                    let given = rounds.answered.lock().ok().and_then(|mut a| a.take());
                    match given {
                        Some(result) => outcome(&form, result),
                        None => {
                            if let Ok(mut wanted) = rounds.wanted.lock() {
                                *wanted = Some(params);
                            }
                            Err(AskError::new(
                                ErrorCode::Other(INPUT_REQUIRED.to_owned()),
                                "the client is asked to show the user a form first",
                            )
                            .into())
                        }
                    }
                }
            }
        })
    }
}

/// Offers the human the page at `url` and waits for the rest of the chain
/// (the web answerer, which takes the answer from the page); a declined or
/// closed offer dismisses the questions, and the page's question with them.
async fn on_page(
    peer: &Peer<RoleServer>,
    page: &Page,
    dropped: &Dropped,
    form: &Form<'_>,
    next: Next<'_>,
) -> Result<Vec<ask_user_seam::Answer>, AnswerError> {
    let url = &page.url;
    let mut too_big = std::pin::pin!(dropped.after_now());
    let offer = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: format!("{}\n\nAnswer on this page: {url}", form.message()),
        url: url.to_owned(),
        elicitation_id: ask_user_seam::secret::token().map_err(AnswerError::other)?,
    };
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(offer));
    let Ok(handle) = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
    else {
        return next.run().await;
    };
    let mut open = OpenForm(Some(handle));
    // The person may take a while to open it: the page waits for them.
    let _offered = page.offered();
    let mut answered = next.run();
    loop {
        let reply = async {
            match open.0.as_mut() {
                Some(handle) => (&mut handle.rx).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = &mut answered => return result,
            () = &mut too_big => return Err(too_large()),
            reply = reply => {
                open.0 = None;
                // Accepted: the human went to the page, and the answer comes
                // from there. Not offered at all: the page stays open anyway.
                if let Ok(Ok(ClientResult::ElicitResult(result))) = reply
                    && result.action != ElicitationAction::Accept
                {
                    return outcome(form, result);
                }
            }
        }
    }
}
