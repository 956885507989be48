//! A team's answer page: people sign in once with their person token and
//! keep a session, which any of the team's servers accepts.
//!
//! - `POST /signin` `{"token":"askusr_…"}`: a person's token (an agent's is
//!   refused) opens a session: a random id in a cookie (`HttpOnly`,
//!   `SameSite=Strict`, and `Secure` with the `__Host-` prefix when the
//!   public address is `https://`), kept in the database as its digest
//!   only, for [`SESSION_LIFETIME`]. The token itself is never stored in the
//!   browser.
//! - `POST /signout`: ends this browser's session.
//! - Every page request (the page, its events, its answers) is the session's
//!   person, looked up in the database each time: a revoked token ends its
//!   sessions at once, on every server.
//! - A request whose `Origin` is not this server's is refused (403): no
//!   other site can sign someone in, answer, or sign them out.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;

use ask_user_web::answer_page;
use ask_user_web::refusal::refusal;

use crate::store::Person;
use crate::store::team::{SESSION_LIFETIME, SignIns};

/// The sign-in page.
const SIGN_IN: &str = include_str!("signin.html");

/// The largest sign-in body taken, in bytes (a token is 39 characters).
const MAX_SIGN_IN_BYTES: usize = 1024;

/// People's sessions on a team's page.
pub struct Sessions {
    store: Arc<dyn SignIns>,
    /// The public address is `https://`: cookies are `Secure`.
    secure: bool,
    /// The public address's origin (`https://inbox.example.com`), when
    /// given: requests from a browser there are this server's own.
    origin: Option<String>,
}

impl Sessions {
    /// Sessions in `store`, for pages served at `public_url` (behind a
    /// reverse proxy, say) or at whatever address a browser used.
    pub fn new(store: Arc<dyn SignIns>, public_url: Option<&str>) -> Self {
        let origin = public_url.and_then(|url| {
            origin(url).or_else(|| {
                tracing::warn!(url, "the public address is not a URL: only the address a browser used is this server's origin");
                None
            })
        });
        Sessions {
            store,
            secure: origin.as_deref().is_some_and(|o| o.starts_with("https://")),
            origin,
        }
    }

    /// The session cookie's name: `__Host-` prefixed when `Secure`, so
    /// that no other host (a sibling subdomain) can set or shadow it.
    fn cookie(&self) -> &'static str {
        match self.secure {
            true => "__Host-ask-user-session",
            false => "ask-user-session",
        }
    }

    /// Whether a request's `Origin` (when sent) is this server's: the
    /// public address's, or the address the browser used (its `Host`).
    fn same_origin(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return true;
        };
        let Some(origin) = origin.to_str().ok().and_then(self::origin) else {
            return false;
        };
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .filter(|host| !host.is_empty() && !host.contains(['/', '@', '?', '#']));
        self.origin.as_ref() == Some(&origin)
            || host.is_some_and(|host| {
                ["http", "https"].iter().any(|scheme| {
                    self::origin(&format!("{scheme}://{host}")).as_ref() == Some(&origin)
                })
            })
    }

    /// The person a page request comes from, or its refusal: 403 from
    /// another site, 401 without a live session.
    pub async fn admit(&self, parts: &Parts) -> Result<Person, Response> {
        if !self.same_origin(&parts.headers) {
            return Err(foreign());
        }
        let Some(session) = answer_page::cookie(&parts.headers, self.cookie()) else {
            return Err(signed_out());
        };
        match self.store.session(session, crate::now()).await {
            Ok(Some(identity)) => Ok(Person {
                name: identity.name,
                groups: identity.groups,
            }),
            Ok(None) => Err(signed_out()),
            Err(error) => Err(unavailable(error.to_string())),
        }
    }

    /// What a browser gets at `/`: the page when signed in, else the
    /// sign-in form.
    pub async fn front(&self, parts: &Parts) -> Response {
        match self.admit(parts).await {
            Ok(_) => answer_page::page_html(),
            Err(refused) if refused.status() == StatusCode::UNAUTHORIZED => {
                answer_page::html(SIGN_IN)
            }
            Err(refused) => refused,
        }
    }

    /// The routes to sign in and out.
    pub fn routes(self: Arc<Self>) -> Router {
        Router::new()
            .route("/signin", post(sign_in))
            .route("/signout", post(sign_out))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_SIGN_IN_BYTES))
            .with_state(self)
    }

    /// The `Set-Cookie` value that keeps `session` (or, empty, forgets it).
    fn set_cookie(&self, session: &str) -> String {
        let age = match session.is_empty() {
            true => 0,
            false => SESSION_LIFETIME / 1000,
        };
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{}={session}; Path=/; Max-Age={age}; HttpOnly; SameSite=Strict{secure}",
            self.cookie()
        )
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignIn {
    token: String,
}

async fn sign_in(
    State(sessions): State<Arc<Sessions>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if !sessions.same_origin(&headers) {
        return foreign();
    }
    let Ok(SignIn { token }) = serde_json::from_slice(&body) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "send {\"token\":\"askusr_…\"}",
        );
    };
    match sessions.store.sign_in(token.trim(), crate::now()).await {
        Ok(Some((session, identity))) => (
            [(header::SET_COOKIE, sessions.set_cookie(&session))],
            axum::Json(serde_json::json!({ "name": identity.name })),
        )
            .into_response(),
        Ok(None) => refusal(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this token is unknown, revoked, or an agent's: the page takes a person's token \
             (an admin makes one with `ask-user inbox token create NAME --role person`)",
        ),
        Err(error) => unavailable(error.to_string()),
    }
}

async fn sign_out(State(sessions): State<Arc<Sessions>>, headers: HeaderMap) -> Response {
    if !sessions.same_origin(&headers) {
        return foreign();
    }
    if let Some(session) = answer_page::cookie(&headers, sessions.cookie())
        && let Err(error) = sessions.store.sign_out(session).await
    {
        return unavailable(error.to_string());
    }
    (
        StatusCode::NO_CONTENT,
        [(header::SET_COOKIE, sessions.set_cookie(""))],
    )
        .into_response()
}

fn signed_out() -> Response {
    refusal(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "not signed in, or the session ended: open the page and sign in with your person token",
    )
}

/// The origin of `url` as browsers send it: scheme and host in lower
/// case, the port only when it is not the scheme's default
/// (`https://Inbox.Example.com:443/team` is `https://inbox.example.com`);
/// `None` for what has no such origin (`null`, a `file:` URL, no URL).
fn origin(url: &str) -> Option<String> {
    let origin = reqwest::Url::parse(url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

fn foreign() -> Response {
    refusal(
        StatusCode::FORBIDDEN,
        "foreign_origin",
        "this server answers only its own page (the request came from another site)",
    )
}

fn unavailable(why: String) -> Response {
    tracing::warn!(%why, "a page session could not be checked");
    refusal(StatusCode::SERVICE_UNAVAILABLE, "unavailable", why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), value.parse().unwrap()))
            .collect()
    }

    #[tokio::test]
    async fn only_this_servers_origin_is_its_own() {
        let store = Arc::new(
            crate::store::PgStore::connect(&crate::store::postgres::tests::database().await)
                .await
                .unwrap(),
        );
        let public = Sessions::new(store.clone(), Some("https://inbox.example.com/team"));
        assert!(public.secure);
        assert_eq!(public.cookie(), "__Host-ask-user-session");
        let from =
            |origin: &str| headers(&[(header::HOST, "10.0.0.5:8080"), (header::ORIGIN, origin)]);
        assert!(public.same_origin(&from("https://inbox.example.com")));
        assert!(public.same_origin(&from("http://10.0.0.5:8080")));
        assert!(!public.same_origin(&from("https://evil.example")));
        assert!(!public.same_origin(&from("null")));
        // Compared as origins, not as text: case and a default port differ.
        let spelled = Sessions::new(store.clone(), Some("https://Inbox.Example.com:443"));
        assert!(spelled.same_origin(&from("https://inbox.example.com")));
        assert!(spelled.same_origin(&from("HTTPS://INBOX.example.com:443")));
        assert!(!spelled.same_origin(&from("https://inbox.example.com:8443")));
        assert!(!spelled.same_origin(&from("http://inbox.example.com")));
        let hosted =
            |origin: &str| headers(&[(header::HOST, "Inbox.Local:80"), (header::ORIGIN, origin)]);
        let plain = Sessions::new(store.clone(), None);
        assert!(plain.same_origin(&hosted("http://inbox.local")));
        assert!(!plain.same_origin(&hosted("http://evil.example")));
        assert!(public.same_origin(&headers(&[(header::HOST, "10.0.0.5:8080")])));
        let cookie = public.set_cookie("s1");
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        assert!(cookie.ends_with("; Secure"), "{cookie}");
        assert!(public.set_cookie("").contains("Max-Age=0"));
        let plain = Sessions::new(store, None);
        assert!(!plain.secure && !plain.set_cookie("s1").contains("Secure"));
        assert_eq!(plain.cookie(), "ask-user-session");
    }
}
