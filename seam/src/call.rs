//! A call of its own: an agent made for one call (or one turn: a root, or
//! a sub-agent of a root the front end keeps), and
//! answerers that reach that agent only, all taken back when the call is
//! dropped, whichever way it ends (its result, an error, a cancelled
//! future). Every front end that runs a call for someone asks through one.

use std::sync::Arc;

use crate::agents::AgentHandle;
use crate::user_questions::UserQuestions;
use crate::waterfall::{Answerer, AnswererHandle, Placement};

/// An agent registered for one call, with its own answerers; see the
/// [module](self). Made by [`UserQuestions::scoped_call`] and
/// [`UserQuestions::scoped_sub_agent_call`].
#[must_use = "the agent ends when the call is dropped"]
pub struct ScopedCall<'a> {
    seam: &'a UserQuestions,
    agent: AgentHandle,
    answerers: Vec<AnswererHandle>,
}

impl<'a> ScopedCall<'a> {
    /// The call of `agent`, registered for it (ended with it).
    pub(crate) fn new(seam: &'a UserQuestions, agent: AgentHandle) -> Self {
        ScopedCall {
            seam,
            agent,
            answerers: Vec::new(),
        }
    }

    /// The call's agent: the caller to run the call as.
    pub fn agent(&self) -> &AgentHandle {
        &self.agent
    }

    /// This call is the retry of one whose ask was counted already (a
    /// form answered in two protocol rounds): its ask is not counted
    /// against a relay's limit again ([`AgentRegistry::counted_already`]).
    ///
    /// [`AgentRegistry::counted_already`]: crate::AgentRegistry::counted_already
    pub fn retried(&self) {
        self.seam.agents().counted_already(&self.agent, 1);
    }

    /// Offers this call's questions to `answerer` too, ahead of the host's
    /// answerers (`first`) or after all of them; no other call sees it.
    pub fn answer_with(&mut self, answerer: Arc<dyn Answerer>, first: bool) {
        let placement = Placement {
            scope: Some(self.agent.id().to_owned()),
            prepend: first,
            timeout: None,
        };
        let handle = self.seam.waterfall().register_arc(answerer, placement);
        self.answerers.push(handle);
    }
}

impl Drop for ScopedCall<'_> {
    fn drop(&mut self) {
        for answerer in &self.answerers {
            answerer.dispose();
        }
        self.seam.agents().end(&self.agent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::AgentRegistry;
    use crate::waterfall::{AnswerFuture, Ask, Next};
    use crate::{Answer, AskRequest, ErrorCode, Question};
    use tokio_util::sync::CancellationToken;

    struct Fixed(&'static str);

    impl Answerer for Fixed {
        fn name(&self) -> &str {
            self.0
        }
        fn answer<'a>(&'a self, ask: &'a Ask, _next: Next<'a>) -> AnswerFuture<'a> {
            let answer = Answer {
                id: ask.request.questions[0].id.clone(),
                selected: Vec::new(),
                custom: Some(self.0.to_owned()),
            };
            Box::pin(async move { Ok(vec![answer]) })
        }
    }

    fn request() -> AskRequest {
        AskRequest {
            questions: vec![Question::new("q", "Which?")],
        }
    }

    async fn ask(
        seam: &UserQuestions,
        agent: &AgentHandle,
    ) -> Result<Vec<Answer>, crate::AskError> {
        seam.ask(request(), Some(agent), &CancellationToken::new())
            .await
    }

    #[tokio::test]
    async fn a_calls_answerer_reaches_that_call_only_and_both_go_when_it_is_dropped() {
        let seam = UserQuestions::new(Arc::new(AgentRegistry::new()));
        seam.waterfall()
            .register(Fixed("host"), Placement::default());
        let mut call = seam.scoped_call("call-1");
        call.answer_with(Arc::new(Fixed("form")), true);
        let other = seam.scoped_call("call-2");
        assert_eq!(
            ask(&seam, call.agent()).await.unwrap()[0].custom.as_deref(),
            Some("form")
        );
        assert_eq!(
            ask(&seam, other.agent()).await.unwrap()[0]
                .custom
                .as_deref(),
            Some("host")
        );

        let agent = call.agent().clone();
        // A call's future dropped half-way drops its scope with it.
        let dropped = async move {
            let _call = call;
            std::future::pending::<()>().await
        };
        drop(dropped);
        let error = ask(&seam, &agent).await.unwrap_err();
        assert_eq!(error.code(), Some(&ErrorCode::CallerNotLive));
        let again = seam.scoped_call("call-1");
        assert_eq!(
            ask(&seam, again.agent()).await.unwrap()[0]
                .custom
                .as_deref(),
            Some("host")
        );
    }

    #[tokio::test]
    async fn an_answerer_added_last_hears_only_what_the_hosts_pass() {
        struct Pass;
        impl Answerer for Pass {
            fn name(&self) -> &str {
                "pass"
            }
            fn answer<'a>(&'a self, _ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
                next.pass("not mine")
            }
        }
        let seam = UserQuestions::new(Arc::new(AgentRegistry::new()));
        seam.waterfall()
            .register(Fixed("host"), Placement::default());
        let mut call = seam.scoped_call("call-1");
        call.answer_with(Arc::new(Fixed("form")), false);
        assert_eq!(
            ask(&seam, call.agent()).await.unwrap()[0].custom.as_deref(),
            Some("host")
        );

        let seam = UserQuestions::new(Arc::new(AgentRegistry::new()));
        seam.waterfall().register(Pass, Placement::default());
        let mut call = seam.scoped_call("call-1");
        call.answer_with(Arc::new(Fixed("form")), false);
        assert_eq!(
            ask(&seam, call.agent()).await.unwrap()[0].custom.as_deref(),
            Some("form")
        );
    }
}
