//! Serving HTTP on a port of this machine (the web answerer's page, MCP over
//! HTTP) or on a private Unix socket (the inbox's API for this user's agents
//! and commands), hardened against clients that never authenticate: each
//! connection must send its request head within [`HEADER_TIMEOUT`] (also
//! while idle between requests), at most [`MAX_CONNECTIONS`] are served at
//! once (more wait in the kernel's queue until one ends), and stopping
//! answers every connection already made before the port closes.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use futures_util::FutureExt;
use hyper::server::conn::http1;
use hyper::service::{Service, service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener, UnixStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Connections served at once. A page holds one (its event stream) plus one
/// per request in flight; the rest of the budget absorbs a burst.
pub const MAX_CONNECTIONS: usize = 256;

/// Time a connection has to send a request's head: from when it opens, and
/// again from the end of each response (so an idle keep-alive connection is
/// closed after it too). A slow or silent client cannot hold a slot longer.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long stopping waits for connections to finish the request in hand
/// (or, made but not yet read, to send it) before cutting them.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// How a client writes the host of a server bound to `address`: the
/// loopback address for an unspecified bind, brackets around IPv6.
pub fn client_host(address: SocketAddr) -> String {
    match address.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_owned(),
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    }
}

/// Listens on `address` for `what` (e.g. "the inbox"); the error names both.
pub async fn listen(what: &str, address: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(address).await.map_err(|e| {
        std::io::Error::new(e.kind(), format!("{what} cannot listen on {address}: {e}"))
    })
}

/// Where connections come from.
pub trait Accept: Send + 'static {
    /// A connection.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection; on an error (a refused peer, no descriptor
    /// left) the server tries again shortly.
    fn accept(&self) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
}

impl Accept for TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn accept(&self) -> std::io::Result<Self::Stream> {
        TcpListener::accept(self).await.map(|(stream, _)| stream)
    }
}

/// The longest path of a Unix socket, in bytes (`sun_path` less its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// A Unix socket that only this user's processes may use: made mode 0600 in
/// a folder of this user's, and every connection's peer checked to be this
/// user (root's too is refused: a program of this user's can always reach
/// it, nobody else needs to). The file goes when it is dropped.
pub struct PrivateSocket {
    listener: UnixListener,
    path: PathBuf,
}

impl PrivateSocket {
    /// Binds `path`, replacing a socket left there by a process that ended
    /// (the caller holds the lock that says no other one serves).
    pub fn bind(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::PermissionsExt;
        let length = path.as_os_str().len();
        if length > MAX_SOCKET_PATH {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} is {length} bytes long, longer than a socket's path may be \
                     ({MAX_SOCKET_PATH}): give a shorter state folder (ASK_USER_STATE_DIR)",
                    path.display()
                ),
            ));
        }
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot remove the old socket {}: {e}", path.display()),
                ));
            }
            _ => {}
        }
        let listener = UnixListener::bind(path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot listen on {}: {e}", path.display()),
            )
        })?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        Ok(PrivateSocket {
            listener,
            path: path.to_owned(),
        })
    }
}

impl Drop for PrivateSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Accept for PrivateSocket {
    type Stream = UnixStream;
    async fn accept(&self) -> std::io::Result<UnixStream> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            match stream.peer_cred() {
                Ok(peer) if peer.uid() == ask_user_seam::files::me() => return Ok(stream),
                Ok(peer) => {
                    tracing::warn!(uid = peer.uid(), "refused a connection of another user")
                }
                Err(error) => tracing::warn!(%error, "refused a connection of no known user"),
            }
        }
    }
}

/// An HTTP server running on its own task, until stopped or dropped.
pub struct Serving {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Serves `app` on `listener`, at most [`MAX_CONNECTIONS`] at once.
    pub fn start(listener: impl Accept, app: Router) -> Self {
        Serving::start_with(listener, app, MAX_CONNECTIONS)
    }

    /// Serves `app` on `listener`, at most `connections` at once (an API
    /// whose clients long-poll holds one per waiting client).
    pub fn start_with(listener: impl Accept, app: Router, connections: usize) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(listener, app, stop.clone(), connections));
        Serving { stop, task }
    }

    /// Stops: connections already made are still answered (a second answer
    /// posted at the same moment as the first gets its 409, not a reset),
    /// responses in flight get [`DRAIN_TIMEOUT`] to finish, then the port
    /// closes.
    pub async fn stop(&mut self) {
        self.stop.cancel();
        let _ = (&mut self.task).await;
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: impl Accept, app: Router, stop: CancellationToken, connections: usize) {
    let slots = Arc::new(Semaphore::new(connections));
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            () = stop.cancelled() => break,
            slot = slots.clone().acquire_owned() => slot.expect("never closed"),
        };
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(stream) => stream,
                // Out of descriptors, say: try again shortly rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        connections.spawn(connection(stream, app.clone(), stop.clone(), Some(slot)));
    }
    // Connections the kernel has completed are answered, not reset.
    while let Some(Ok(stream)) = listener.accept().now_or_never() {
        connections.spawn(connection(stream, app.clone(), stop.clone(), None));
    }
    drop(listener);
    let drained = async { while connections.join_next().await.is_some() {} };
    // Past the bound, dropping the set cuts what is left.
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, drained).await;
}

/// Serves one connection. Once stopping, it finishes the request in hand
/// and closes; a connection made but whose first request has not been read
/// yet is answered first (else it would be closed as idle, unanswered).
async fn connection(
    stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static,
    app: Router,
    stop: CancellationToken,
    _slot: Option<OwnedSemaphorePermit>,
) {
    let first_request = CancellationToken::new();
    let service = {
        let app = TowerToHyperService::new(app);
        let first_request = first_request.clone();
        service_fn(move |request| {
            first_request.cancel();
            app.call(request)
        })
    };
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = stop.cancelled() => {}
    }
    tokio::select! {
        _ = connection.as_mut() => return,
        () = first_request.cancelled() => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_socket_path_too_long_is_refused_saying_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let long = dir.path().join("x".repeat(MAX_SOCKET_PATH));
        let error = PrivateSocket::bind(&long).err().expect("too long");
        assert!(
            error.to_string().contains("give a shorter state folder"),
            "{error}"
        );
        // One that fits is made for this user alone, and goes with it.
        let path = dir.path().join("inbox.sock");
        let socket = PrivateSocket::bind(&path).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        drop(socket);
        assert!(!path.exists());
    }

    #[test]
    fn a_client_writes_the_host_it_can_reach() {
        let host = |a: &str| client_host(a.parse().unwrap());
        assert_eq!(host("0.0.0.0:80"), "127.0.0.1");
        assert_eq!(host("[::]:80"), "127.0.0.1");
        assert_eq!(host("192.168.1.5:80"), "192.168.1.5");
        assert_eq!(host("[fe80::1]:80"), "[fe80::1]");
    }
}
