//! `ask-user mcp --http ADDR`: the same server over Streamable HTTP.
//!
//! It listens on loopback unless told otherwise. Every request needs the
//! per-run bearer token (`Authorization: Bearer …`, 401 without); the Host
//! header must name this server and an Origin header, when sent, must be
//! this server's own (403 otherwise: no DNS rebinding, no cross-site calls),
//! both checked by rmcp's service. The endpoint is `/mcp`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::McpServer;
use ask_user_web::serve::{Serving, client_host};

/// The MCP server on HTTP, until stopped.
pub struct McpHttp {
    server: McpServer,
    address: SocketAddr,
    token: String,
    stop: CancellationToken,
    serving: Serving,
}

impl McpHttp {
    /// Binds `bind` (port 0: any free port) and starts serving `server`,
    /// to requests with `token`, or a random token of this run. A token
    /// given also keys the server (see [`McpServer::keyed_by`]), so a call
    /// asked again after a restart finds its inbox question.
    pub async fn start(
        server: McpServer,
        bind: SocketAddr,
        token: Option<String>,
    ) -> std::io::Result<Self> {
        let listener = ask_user_web::serve::listen("ask-user mcp", bind).await?;
        let address = listener.local_addr()?;
        let (server, token) = match token {
            Some(token) => (server.keyed_by(token.as_bytes())?, token),
            None => (server, ask_user_seam::secret::token()?),
        };
        let stop = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = stop.child_token();
        config.allowed_hosts = names(address)
            .iter()
            .map(|host| format!("{host}:{}", address.port()))
            .collect();
        config.allowed_origins = names(address)
            .iter()
            .map(|host| format!("http://{host}:{}", address.port()))
            .collect();
        let sessions = server.clone();
        let service = StreamableHttpService::new(
            move || Ok(sessions.for_session()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let app =
            Router::new()
                .nest_service("/mcp", service)
                .layer(middleware::from_fn_with_state(
                    Arc::new(token.clone()),
                    bearer,
                ));
        Ok(McpHttp {
            server,
            address,
            token,
            stop,
            serving: Serving::start(listener, app),
        })
    }

    /// The address served.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The endpoint a client registers.
    pub fn url(&self) -> String {
        let host = client_host(self.address);
        format!("http://{host}:{}/mcp", self.address.port())
    }

    /// The bearer token every request must carry.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Stops serving: every call under way ends `ASK_ABORTED` and its
    /// result goes to its client, then the sessions end and the port closes.
    pub async fn stop(mut self) {
        self.server.abort_calls(crate::STOP_BOUND).await;
        // Connections finish what they are sending (a call's result on its
        // stream) before the sessions end.
        self.serving.stop().await;
        self.stop.cancel();
    }
}

/// The names a request may give this server by: `localhost` and its
/// loopback addresses, and the address it is bound to.
fn names(address: SocketAddr) -> Vec<String> {
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "[::1]".to_owned(),
    ];
    match address.ip() {
        ip if ip.is_loopback() || ip.is_unspecified() => {}
        IpAddr::V4(ip) => names.push(ip.to_string()),
        IpAddr::V6(ip) => names.push(format!("[{ip}]")),
    }
    names
}

/// Lets a request through only with the run's bearer token.
async fn bearer(State(token): State<Arc<String>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    if given.is_some_and(|given| ask_user_seam::secret::same(given.as_bytes(), token.as_bytes())) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "send the header Authorization: Bearer <token>, with the token `ask-user mcp --http` printed",
    )
        .into_response()
}
