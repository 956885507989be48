//! An HTTP/1 server of the test's own (a fake model, a proxy) on a free
//! port of 127.0.0.1, on a thread of its own, for the life of the test
//! process.

use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::mpsc;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// Serves every request with `handle` (given the request and the server's
/// own address); returns that address.
pub fn serve<H, F, B, E>(handle: H) -> SocketAddr
where
    H: Fn(Request<Incoming>, SocketAddr) -> F + Clone + Send + 'static,
    F: Future<Output = Result<Response<B>, E>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn Error + Send + Sync>>,
    E: Into<Box<dyn Error + Send + Sync>>,
{
    let (bound, address) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let own = listener.local_addr().unwrap();
            bound.send(own).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let handle = handle.clone();
                let service = service_fn(move |request| handle(request, own));
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), service));
            }
        });
    });
    address.recv().unwrap()
}
