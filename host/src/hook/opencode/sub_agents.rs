//! Who asks an OpenCode question: its main agent, or a sub-agent its
//! `task` tool started (a session with a parent; OpenCode denies its
//! sub-agents the question tool unless the user's config allows it). A
//! sub-agent's question is shown in its root's session, named as the
//! sub-agent, as a relayed sub-agent's is.

use super::server::Server;

/// How many parents are followed to the root (OpenCode nests one level
/// unless its `subagent_depth` allows more).
const MAX_DEPTH: usize = 8;

/// The longest sub-agent name taken from a title (in characters): a model
/// wrote it.
const MAX_NAME: usize = 80;

/// The root session and the sub-agent's name, when a sub-agent asks in
/// `session` (of the project at `directory`); `None` for a main agent's
/// question, or when OpenCode did not say (then it shows as its own
/// session's).
pub async fn of(
    server: &Server,
    session: &str,
    directory: Option<&str>,
) -> Option<(String, String)> {
    let asking = server.session(session, directory).await.ok()?;
    let mut root = asking.parent?;
    for _ in 0..MAX_DEPTH {
        match server.session(&root, directory).await.ok()?.parent {
            Some(parent) => root = parent,
            None => return Some((root, name(&asking.title))),
        }
    }
    None
}

/// A sub-agent's name from its session's title, as OpenCode's `task` tool
/// writes it (`<description> (@<agent> subagent)`): `<agent>
/// (<description>)`; another title as it is. Printable, at most
/// [`MAX_NAME`] characters.
fn name(title: &str) -> String {
    let named = title
        .strip_suffix(" subagent)")
        .and_then(|rest| rest.rsplit_once(" (@"))
        .filter(|(_, agent)| !agent.is_empty())
        .map(|(description, agent)| match description.trim() {
            "" => agent.to_owned(),
            description => format!("{agent} ({description})"),
        })
        .unwrap_or_else(|| title.to_owned());
    ask_user_seam::text::name_line(&named, MAX_NAME).unwrap_or_else(|| "sub-agent".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenCode's sessions, as its server gives them: a root, a sub-agent
    /// of it, and one of that sub-agent.
    fn sessions() -> Server {
        let address = ask_user_test_support::http_thread::serve(|request, _| async move {
            let body = match request.uri().path() {
                "/session/ses_root" => Some(r#"{"id": "ses_root", "title": "Deploy"}"#),
                "/session/ses_mid" => Some(
                    r#"{"id": "ses_mid", "parentID": "ses_root",
                        "title": "Look around (@general subagent)"}"#,
                ),
                "/session/ses_leaf" => Some(
                    r#"{"id": "ses_leaf", "parentID": "ses_mid",
                        "title": "Check the config (@explore subagent)"}"#,
                ),
                _ => None,
            };
            let response = hyper::Response::builder().status(match body {
                Some(_) => 200,
                None => 404,
            });
            response.body(body.unwrap_or_default().to_owned())
        });
        Server::new(address.port(), "opencode".into(), "pw".into()).unwrap()
    }

    #[tokio::test]
    async fn a_sub_agents_question_goes_to_its_root_and_a_main_agents_to_its_own() {
        let server = sessions();
        let of = |session| of(&server, session, None);
        assert_eq!(
            of("ses_leaf").await,
            Some(("ses_root".into(), "explore (Check the config)".into()))
        );
        assert_eq!(
            of("ses_mid").await,
            Some(("ses_root".into(), "general (Look around)".into()))
        );
        assert_eq!(of("ses_root").await, None);
        // OpenCode does not say: shown as its own session's.
        assert_eq!(of("ses_unknown").await, None);
    }

    #[test]
    fn a_sub_agent_is_named_by_its_kind_and_task_and_nothing_else_is_trusted() {
        assert_eq!(
            name("Ask about the deploy (@general subagent)"),
            "general (Ask about the deploy)"
        );
        assert_eq!(name(" (@explore subagent)"), "explore");
        assert_eq!(name("a title of its own"), "a title of its own");
        assert_eq!(name("line\nbreak\u{1b}[31m"), "line break [31m");
        assert_eq!(name("\n"), "sub-agent");
        assert_eq!(name(&"x".repeat(500)).chars().count(), MAX_NAME);
    }
}
