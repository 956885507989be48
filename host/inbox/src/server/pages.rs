//! What the pages see: each question as a frame, its departure, whose
//! agents come and go, and a team's announcements turned into frames, each
//! shown only to the people of its audience.

use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use ask_user_seam::remote::{self, Outcome, Unsettled};

use crate::access::Principal;
use crate::store::{Record, SettledBy, State as QuestionState, TeamStore};
use ask_user_web::answer_page::{Audience, Desk, Left, PageFrame, Shown, cancel, withdrawn};
use axum::http::request::Parts;

use super::{Inbox, Unanswered};

impl Inbox {
    /// `record`'s frame ([`frame`]) and, where `[inbox.escalate]` reminds,
    /// when (`remindAt`).
    pub(super) fn frame(&self, record: &Record, agent_waiting: bool) -> Shown {
        let mut shown = frame(record, agent_waiting);
        if let Some(at) = self.remind_at(record) {
            shown.frame["context"]["remindAt"] = crate::rfc3339(at).into();
        }
        shown
    }
}

/// A question's `waterfall` frame, with what asked it, whether its agent
/// waits for it now, and who may answer it, for the pages of its audience.
fn frame(record: &Record, agent_waiting: bool) -> Shown {
    let mut frame = remote::waterfall(&record.id, Some(&record.session), &record.request);
    frame["context"] = json!({
        "session": record.session,
        "sessionShown": ask_user_seam::text::session(&record.session),
        "agent": record.agent,
        "cwd": record.cwd,
        "folder": record.cwd.as_deref().map(|cwd| ask_user_seam::text::folder(std::path::Path::new(cwd))),
        "askedAt": crate::rfc3339(record.asked_at),
        "audience": record.audience,
        "agentWaiting": agent_waiting,
    });
    Shown {
        frame,
        audience: Audience(record.audience.clone()),
    }
}

/// How often the pages hear whose agents came and went.
const PRESENCE_EVERY: Duration = Duration::from_secs(5);

/// Tells open pages when a question's agent goes (killed, say) or comes
/// back: a `presence` frame `{eventId, agentWaiting}` for each change, every
/// [`PRESENCE_EVERY`] while a page is open.
pub(super) async fn presence(inbox: Arc<Inbox>) {
    let mut told: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(PRESENCE_EVERY) => {}
            () = inbox.presence_now.notified() => {}
            () = inbox.closing.cancelled() => return,
        }
        if inbox.frames.receiver_count() == 0 {
            told.clear();
            continue;
        }
        let records = match inbox.store.list(false, 0).await {
            Ok(listing) => listing.records,
            Err(error) => {
                tracing::warn!(%error, "the inbox could not list its questions for its pages");
                continue;
            }
        };
        let mut now = std::collections::HashMap::with_capacity(records.len());
        for record in records {
            let waiting = inbox.agent_waiting(&record);
            if told.get(&record.id).is_some_and(|&was| was != waiting)
                || (!told.contains_key(&record.id) && !waiting)
            {
                let _ = inbox.frames.send(PageFrame::Show(Shown {
                    frame: json!({
                        "type": "presence",
                        "eventId": record.id,
                        "agentWaiting": waiting,
                    }),
                    audience: Audience(record.audience),
                }));
            }
            now.insert(record.id, waiting);
        }
        told = now;
    }
}

/// The `cancel` frame of question `id`, which left the waiting state as
/// `state`, settled by `by` (a withdrawing agent, with its reason) and,
/// in a team, by the person `person`: what the pages say of it.
pub(super) fn departure(
    id: &str,
    state: QuestionState,
    by: Option<&SettledBy>,
    person: Option<&str>,
) -> Value {
    let mut frame = match (state, by) {
        (QuestionState::Withdrawn, Some(SettledBy::Agent(reason))) => withdrawn(id, reason),
        (QuestionState::Withdrawn, _) => withdrawn(id, ""),
        (QuestionState::Expired, _) => cancel(id, Left::Expired),
        (QuestionState::Cancelled, _) => cancel(id, Left::Dismissed),
        (QuestionState::Answered | QuestionState::Waiting, _) => cancel(id, Left::Answered),
    };
    if let Some(person) = person {
        frame["by"] = person.into();
    }
    frame
}

/// Tells a team's open pages of the questions announced (their ids from
/// `announced`), read from the database in the order they come, many at a
/// time: a waiting one is shown, one that left is dropped, each only to
/// the pages whose person is in its audience.
pub(super) async fn tell_pages(
    inbox: Arc<Inbox>,
    store: Arc<dyn TeamStore>,
    mut announced: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    /// The most ids read at once.
    const BATCH: usize = 256;
    let mut ids = Vec::with_capacity(BATCH);
    while announced.recv_many(&mut ids, BATCH).await > 0 {
        match store.records(&ids).await {
            Ok(records) => {
                for record in records {
                    let shown = match record.state {
                        QuestionState::Waiting => {
                            inbox.frame(&record, inbox.agent_waiting(&record))
                        }
                        state => Shown {
                            frame: departure(
                                &record.id,
                                state,
                                record.settled_by.as_ref(),
                                record.answered_by.as_deref(),
                            ),
                            audience: Audience(record.audience),
                        },
                    };
                    let _ = inbox.frames.send(PageFrame::Show(shown));
                }
            }
            Err(error) => {
                // What they missed, the pages read again.
                tracing::warn!(%error, "the inbox could not read questions for its pages");
                let _ = inbox.frames.send(PageFrame::Reconnect);
            }
        }
        ids.clear();
    }
}

impl Desk for Inbox {
    /// The owner on one user's page; a signed-in person on a team's.
    type Viewer = Principal;

    async fn admit(&self, parts: &Parts) -> Result<Principal, Response> {
        self.mode.admit(&self.gate, parts).await
    }

    async fn front(&self, parts: Parts) -> Response {
        self.mode.front(&self.gate, parts).await
    }

    fn signed_in(&self, viewer: &Principal) -> Option<String> {
        viewer.person().map(|person| person.name)
    }

    /// A person sees the questions of their audience.
    fn shows(&self, viewer: &Principal, audience: &Audience) -> bool {
        match viewer {
            Principal::Person(person) => crate::store::answerable(&audience.0, &person.groups),
            Principal::Owner | Principal::Agent(_) => true,
        }
    }

    fn subscribe(&self) -> broadcast::Receiver<PageFrame> {
        self.frames.subscribe()
    }

    async fn pending_frames(&self) -> Vec<Shown> {
        match self.store.list(false, 0).await {
            Ok(listing) => {
                report(&listing.unreadable);
                listing
                    .records
                    .iter()
                    .map(|record| self.frame(record, self.agent_waiting(record)))
                    .collect()
            }
            Err(error) => {
                tracing::warn!(%error, "the inbox could not list its questions for a page");
                Vec::new()
            }
        }
    }

    fn page_opened(self: Arc<Self>) -> Box<dyn Send + Sync> {
        Box::new(())
    }

    fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    async fn settle(
        &self,
        viewer: &Principal,
        event_id: &str,
        outcome: Outcome,
    ) -> Result<(), Unsettled> {
        match Inbox::settle(self, event_id, outcome, SettledBy::Page, viewer.person()).await {
            Ok(()) => Ok(()),
            Err(Unanswered::Unsettled(unsettled)) => Err(unsettled),
            // Their page never showed it to them.
            Err(Unanswered::OutsideAudience) => Err(Unsettled::NotPending),
        }
    }
}

/// Logs the questions that could not be read, each with why.
pub(super) fn report(unreadable: &[crate::store::Unreadable]) {
    for row in unreadable {
        tracing::warn!(
            id = row.id,
            why = row.why,
            "a question this version cannot read was left out"
        );
    }
}
