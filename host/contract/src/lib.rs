//! The contract layer: the WIT package `dsh:ask-user`, one module per frozen
//! version (`wit/vX.Y.Z/`), each with its bindings and the one table that
//! converts its types to the host's own.
//!
//! A component's version is read from the name of its `tool` export
//! (`dsh:ask-user/tool@0.1.0`); [`ToolPre`] dispatches on it, so the rest of
//! the host never sees a WIT type. A new version is its module (its
//! bindings and its table, with the same items as `v0_1_0`) and one line
//! in the `versions!` below, which makes every dispatch.
//!
//! An embedder with a [`Linker`] of its own provides the seam import with
//! [`add_to_linker`]: its store's data implements [`UserQuestionsView`],
//! handing out the [`AskContext`] it bound for the call (the caller, the
//! turn's signal, the seam, the limits). The component passes questions only.

pub mod replay;
pub mod v0_1_0;

/// The versions this host loads, oldest first: each as its variant, its
/// module, and its version as WIT writes it. Makes [`Version`],
/// [`add_to_linker`], [`ToolPre`] and [`Tool`].
macro_rules! versions {
    ($($variant:ident => $module:ident, $text:literal;)+) => {
        /// The WIT package versions this host can load.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Version {
            $(
                #[doc = concat!("`dsh:ask-user@", $text, "`.")]
                $variant,
            )+
        }

        impl Version {
            /// Every version this host knows, oldest first.
            pub const KNOWN: &'static [Version] = &[$(Version::$variant),+];

            /// As written after the `@` in WIT names.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Version::$variant => $text,)+
                }
            }
        }

        /// Provides `dsh:ask-user/user-questions` of every known version (and
        /// the `types` interface it uses) to components instantiated with
        /// `linker`.
        pub fn add_to_linker<T: UserQuestionsView + 'static>(
            linker: &mut Linker<T>,
        ) -> wasmtime::Result<()> {
            $($module::add_to_linker(linker)?;)+
            Ok(())
        }

        /// A component linked and ready to instantiate, of whichever version.
        pub enum ToolPre<T: 'static> {
            $($variant($module::AskUserToolPre<T>),)+
        }

        impl<T: Send + 'static> ToolPre<T> {
            pub fn new(linker: &Linker<T>, component: &Component) -> wasmtime::Result<Self> {
                let version = Version::of(component)?;
                let pre = linker.instantiate_pre(component)?;
                let checked = |e: wasmtime::Error| {
                    e.context(format!(
                        "the component does not have the ask-user-tool world of dsh:ask-user@{}",
                        version.as_str()
                    ))
                };
                Ok(match version {
                    $(Version::$variant => {
                        ToolPre::$variant($module::AskUserToolPre::new(pre).map_err(checked)?)
                    })+
                })
            }

            pub fn version(&self) -> Version {
                match self {
                    $(ToolPre::$variant(_) => Version::$variant,)+
                }
            }

            pub async fn instantiate(&self, store: &mut Store<T>) -> wasmtime::Result<Tool> {
                Ok(match self {
                    $(ToolPre::$variant(pre) => Tool::$variant(pre.instantiate_async(store).await?),)+
                })
            }
        }

        /// An instance of the tool, of whichever version.
        pub enum Tool {
            $($variant($module::AskUserTool),)+
        }

        impl Tool {
            pub async fn definition<T: Send>(
                &self,
                store: &mut Store<T>,
            ) -> wasmtime::Result<RawDefinition> {
                match self {
                    $(Tool::$variant(tool) => $module::definition(tool, store).await,)+
                }
            }

            pub async fn execute<T: Send>(
                &self,
                store: &mut Store<T>,
                arguments: &str,
            ) -> wasmtime::Result<Result<ToolOutput, ToolFailure>> {
                match self {
                    $(Tool::$variant(tool) => $module::execute(tool, store, arguments).await,)+
                }
            }
        }
    };
}

versions! {
    V0_1_0 => v0_1_0, "0.1.0";
}

use std::sync::Arc;
use std::task::Poll;

use ask_user_seam::{AgentHandle, Answer, AskRequest, ErrorCode, UserQuestions};
use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

use replay::{Answered, PendingAnswer, Replay, Suspended};

impl Version {
    /// The version of the `dsh:ask-user/tool` interface `component` exports.
    pub fn of(component: &Component) -> wasmtime::Result<Version> {
        const TOOL: &str = "dsh:ask-user/tool@";
        let exports: Vec<String> = component
            .component_type()
            .exports(component.engine())
            .map(|(name, _)| name.to_owned())
            .collect();
        let Some(version) = exports.iter().find_map(|name| name.strip_prefix(TOOL)) else {
            return Err(wasmtime::format_err!(
                "the component does not export the dsh:ask-user/tool interface (it exports: {}); \
                 build it for the ask-user-tool world of a dsh:ask-user version this host knows ({})",
                if exports.is_empty() {
                    "nothing".to_owned()
                } else {
                    exports.join(", ")
                },
                known()
            ));
        };
        Version::KNOWN
            .iter()
            .copied()
            .find(|known| known.as_str() == version)
            .ok_or_else(|| {
                wasmtime::format_err!(
                    "the component exports dsh:ask-user/tool@{version}, a version this host does \
                     not know; it loads {}",
                    known()
                )
            })
    }
}

fn known() -> String {
    let versions: Vec<&str> = Version::KNOWN.iter().map(|v| v.as_str()).collect();
    versions.join(", ")
}

/// A store's data that can hand the seam import its [`AskContext`].
pub trait UserQuestionsView: Send {
    fn user_questions(&mut self) -> &mut AskContext;
}

/// What a component may put in front of the human in one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskLimits {
    /// Asks allowed; every ask counts, answered or not. Past it:
    /// `GUEST_TOO_MANY_ASKS`, and no answerer sees the extra request.
    pub max_asks: u32,
    /// Largest request, in bytes: all its text (ids, questions, headers,
    /// labels, descriptions, option extras as compact JSON) plus
    /// [`ITEM_BYTES`] for each question and each option. Past it:
    /// `GUEST_REQUEST_TOO_LARGE`, and no answerer sees it.
    pub max_request_bytes: usize,
}

impl AskLimits {
    /// No ask at all: what a component gets while it is being loaded.
    pub const NONE: AskLimits = AskLimits {
        max_asks: 0,
        max_request_bytes: 0,
    };
}

/// What a question or an option costs beyond its text, roughly its keys and
/// punctuation as JSON: so that many empty items are not free.
pub const ITEM_BYTES: usize = 32;

/// The seam import's state for one call, bound by the host before the call
/// enters the component: the trust boundary. Nothing in it comes from the
/// component.
///
/// By default an ask waits for its answer inside the run, holding the
/// instance. [`replaying`](Self::replaying) makes a run end at an ask that
/// must wait instead ([`replay`]).
pub struct AskContext {
    seam: Arc<UserQuestions>,
    caller: Option<AgentHandle>,
    signal: CancellationToken,
    limits: AskLimits,
    asks: u32,
    replay: Option<Replay>,
    /// The answer the run ended waiting for.
    waiting: Option<PendingAnswer>,
}

impl AskContext {
    /// Asks of this call go through `seam` on behalf of `caller` (`None`:
    /// agentless, reaching untagged answerers only), within `signal`.
    pub fn new(
        seam: Arc<UserQuestions>,
        caller: Option<AgentHandle>,
        signal: CancellationToken,
        limits: AskLimits,
    ) -> Self {
        AskContext {
            seam,
            caller,
            signal,
            limits,
            asks: 0,
            replay: None,
            waiting: None,
        }
    }

    /// This run of the call answers the asks `replay` holds from the log,
    /// and ends with [`Suspended`] at a new ask the seam cannot answer at
    /// once.
    pub fn replaying(mut self, replay: Replay) -> Self {
        self.replay = Some(replay);
        self
    }

    /// After a run that ended with [`Suspended`]: the log so far and the
    /// answer it waits for. `None` when no ask waits.
    pub fn into_waiting(self) -> Option<(Replay, PendingAnswer)> {
        Some((self.replay?, self.waiting?))
    }

    /// Counts an ask against the limit; past it the call traps.
    fn count_ask(&mut self) -> wasmtime::Result<()> {
        if self.asks == self.limits.max_asks {
            return Err(wasmtime::Error::new(Refusal::TooManyAsks(
                self.limits.max_asks,
            )));
        }
        self.asks += 1;
        Ok(())
    }

    /// Bounds the request, then asks through the seam (or, replaying, takes
    /// the answer an earlier run got).
    async fn ask(&mut self, request: AskRequest) -> wasmtime::Result<Answered> {
        let size = request_size(&request);
        if size > self.limits.max_request_bytes {
            return Err(wasmtime::Error::new(Refusal::RequestTooLarge {
                size,
                limit: self.limits.max_request_bytes,
            }));
        }
        let Some(replay) = &self.replay else {
            return Ok(self
                .seam
                .ask(request, self.caller.as_ref(), &self.signal)
                .await);
        };
        // `count_ask` has counted this one.
        let index = self.asks as usize - 1;
        if let Some(asked) = replay.asked.get(index) {
            if asked.request != request {
                return Err(wasmtime::Error::new(Refusal::Violation(format!(
                    "it asked something else when run again (ask {} of the call)",
                    index + 1
                ))));
            }
            return Ok(asked.answered.clone());
        }
        let mut answer = self.answer(request);
        match std::future::poll_fn(|cx| Poll::Ready(answer.as_mut().poll(cx))).await {
            Poll::Ready((request, answered)) => {
                // Kept for a later ask's run again; after the last ask
                // allowed there is none.
                if let Some(replay) = &mut self.replay
                    && self.asks < self.limits.max_asks
                {
                    replay.record(request, answered.clone());
                }
                Ok(answered)
            }
            Poll::Pending => {
                self.waiting = Some(answer);
                Err(wasmtime::Error::new(Suspended))
            }
        }
    }

    /// The seam's answer to `request`, with the request given back, owning
    /// all it needs: it may outlive the run.
    fn answer(&self, request: AskRequest) -> PendingAnswer {
        let (seam, caller, signal) = (self.seam.clone(), self.caller.clone(), self.signal.clone());
        Box::pin(async move { seam.ask_returning(request, caller.as_ref(), &signal).await })
    }
}

/// What [`AskLimits::max_request_bytes`] measures.
fn request_size(request: &AskRequest) -> usize {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    request
        .questions
        .iter()
        .map(|q| {
            let options: usize = q
                .options
                .iter()
                .flatten()
                .map(|o| {
                    let extra = match o.extra.is_empty() {
                        true => 0,
                        false => json_len(&o.extra),
                    };
                    ITEM_BYTES + o.label.len() + text(&o.description) + extra
                })
                .sum();
            ITEM_BYTES + q.id.len() + q.question.len() + text(&q.header) + options
        })
        .sum()
}

/// The length of `value` as compact JSON, without building the text.
pub fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Why the contract ended a call at the seam: the error its trap carries.
/// A component that asks more, or more at once, than the host allows, or
/// sends what the contract forbids, gets no answer; the runtime names the
/// refusal to the model with its own code.
#[derive(Debug)]
pub enum Refusal {
    /// More asks in one call than allowed (0 while the component is loaded).
    TooManyAsks(u32),
    /// A request larger than the host shows the human.
    RequestTooLarge { size: usize, limit: usize },
    /// Something the WIT contract forbids, said.
    Violation(String),
}

impl Refusal {
    /// The code of the error result (`GUEST_*`).
    pub fn code(&self) -> ErrorCode {
        match self {
            Refusal::TooManyAsks(_) => ErrorCode::GuestTooManyAsks,
            Refusal::RequestTooLarge { .. } => ErrorCode::GuestRequestTooLarge,
            Refusal::Violation(_) => ErrorCode::GuestContractViolation,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooManyAsks(0) => write!(
                f,
                "the component asked the human while it was being loaded, where no ask is \
                 allowed; the request reached no answerer"
            ),
            Refusal::TooManyAsks(max) => write!(
                f,
                "the component asked more than the {max} time(s) one call may ask; the extra \
                 request reached no answerer"
            ),
            Refusal::RequestTooLarge { size, limit } => write!(
                f,
                "the component sent a request of {size} bytes, over the host's limit of {limit} \
                 bytes; it reached no answerer"
            ),
            Refusal::Violation(what) => write!(f, "the component broke the contract: {what}"),
        }
    }
}

impl std::error::Error for Refusal {}

/// The tool's definition as the component states it, before its schemas
/// are read.
pub struct RawDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: String,
    pub output_schema: String,
}

/// A completed call.
pub struct ToolOutput {
    pub answers: Vec<Answer>,
    pub text: String,
}

/// A call the tool failed, with its own error.
pub struct ToolFailure {
    pub name: String,
    pub code: Option<ErrorCode>,
    pub message: String,
}
