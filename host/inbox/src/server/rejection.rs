//! How the API refuses: [`ApiError`], each failure as its status and a
//! message that says what to do, and [`Body`], the one extractor of JSON
//! request bodies, whose rejection is an [`ApiError`] naming the shape the
//! route takes.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use ask_user_seam::remote::Unsettled;

use crate::access;
use crate::store::StoreError;
use ask_user_web::answer_page;
use ask_user_web::refusal::refusal;

/// Why an API request failed.
pub(super) enum ApiError {
    /// The body or the query is not what the route takes: 400.
    BadRequest(String),
    /// The body could not be read (past the limit: 413).
    Body(BytesRejection),
    /// No question of this id, or none this caller may see: 404 alike, so
    /// that it learns nothing of one outside its audience.
    NotFound(String),
    /// The question had already left the waiting state: 409.
    Conflict(&'static str),
    /// The caller's role does not do this: 403.
    Forbidden(String),
    /// The token was revoked while the request waited: 401.
    Revoked,
    /// The store failed; nothing changed, and the request may be sent
    /// again: 503.
    Store(StoreError),
    /// A page link could not be made: 503.
    Unavailable(std::io::Error),
    /// An answer that did not count, by the answer page's rules (409, 422
    /// or 503).
    Unsettled(Unsettled),
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError::Store(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::BadRequest(why) => refusal(StatusCode::BAD_REQUEST, "bad_request", why),
            ApiError::Body(rejection) => {
                let status = rejection.status();
                let code = match status {
                    StatusCode::PAYLOAD_TOO_LARGE => "too_large",
                    _ => "bad_request",
                };
                refusal(status, code, rejection.body_text())
            }
            ApiError::NotFound(id) => refusal(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("the inbox has no question {id:?}; `ask-user inbox list` shows them"),
            ),
            ApiError::Conflict(why) => refusal(StatusCode::CONFLICT, "not_waiting", why),
            ApiError::Forbidden(why) => access::forbidden(why),
            ApiError::Revoked => access::unauthorized("the token was revoked while it waited"),
            ApiError::Store(error) => {
                tracing::warn!(%error, "an inbox request failed");
                refusal(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    error.to_string(),
                )
            }
            ApiError::Unavailable(error) => refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                error.to_string(),
            ),
            ApiError::Unsettled(unsettled) => answer_page::settled(Err(unsettled)),
        }
    }
}

/// A request body of JSON shaped as `T` ([`Shape`]), whatever its content
/// type says.
pub(super) struct Body<T>(pub T);

/// A body a route takes, and how it is described to a client that sent
/// something else.
pub(super) trait Shape: DeserializeOwned {
    /// "an ask", "{\"reason\":…}".
    const SHAPE: &'static str;
}

impl<T: Shape, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Body<T>, ApiError> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(ApiError::Body)?;
        serde_json::from_slice(&bytes)
            .map(Body)
            .map_err(|error| ApiError::BadRequest(format!("not {}: {error}", T::SHAPE)))
    }
}
