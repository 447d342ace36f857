//! The REST API's security: HTTPS with the cluster's node certificate (no client certificate
//! asked: browsers and `curl` have none), and a bearer token for every call that changes
//! something (cancel, savepoint, stop) and, when configured, for reads too.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use crate::channels::secure::TlsConfigs;

/// Who may call the REST API.
#[derive(Clone, Debug, Default)]
pub struct RestAuth {
    /// The bearer token; `None`: no token asked for.
    pub token: Option<String>,
    /// Whether reads need the token too (mutations always do when there is one).
    pub for_reads: bool,
}

impl RestAuth {
    /// Whether a request with `method` and `authorization` may go on.
    fn allows(&self, method: &Method, authorization: Option<&str>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let read = matches!(*method, Method::GET | Method::HEAD);
        if read && !self.for_reads {
            return true;
        }
        authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .is_some_and(|given| constant_time_eq(given.trim().as_bytes(), token.as_bytes()))
    }
}

/// Equality that takes as long whatever the first difference (a token is not guessed byte by
/// byte from response times).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The middleware that answers 401 to a request without the token it needs.
pub async fn check_token(
    State(auth): State<Arc<RestAuth>>,
    request: Request,
    next: Next,
) -> Response {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if auth.allows(request.method(), authorization) {
        return next.run(request).await;
    }
    (
        [(header::WWW_AUTHENTICATE, "Bearer")],
        super::rest::RestError::Unauthorized,
    )
        .into_response()
}

/// A REST listener that speaks HTTPS: connections are accepted and their handshakes run
/// concurrently (a slow or garbage peer holds up only itself); those that complete are served.
pub struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(tokio_rustls::server::TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    /// Serves HTTPS on `listener` with the node certificate of `tls`.
    pub fn new(listener: TcpListener, local: SocketAddr, tls: &TlsConfigs) -> TlsListener {
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.rest_server());
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, peer)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let handshake = tokio::time::timeout(
                        std::time::Duration::from_secs(10),
                        acceptor.accept(tcp),
                    );
                    match handshake.await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "REST TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "REST TLS handshake timed out"),
                    }
                });
            }
        });
        TlsListener { local, ready }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task never ends while the listener lives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_need_the_token_and_reads_only_when_asked() {
        let auth = RestAuth {
            token: Some("s3cret".into()),
            for_reads: false,
        };
        assert!(auth.allows(&Method::GET, None));
        assert!(!auth.allows(&Method::PATCH, None));
        assert!(!auth.allows(&Method::POST, Some("Bearer wrong")));
        assert!(!auth.allows(&Method::POST, Some("s3cret")));
        assert!(auth.allows(&Method::PATCH, Some("Bearer s3cret")));
        let strict = RestAuth {
            for_reads: true,
            ..auth
        };
        assert!(!strict.allows(&Method::GET, None));
        assert!(strict.allows(&Method::GET, Some("Bearer s3cret")));
        assert!(RestAuth::default().allows(&Method::DELETE, None));
    }
}
