//! The web dashboard: a page served by the JobManager at `/`, from files embedded in the
//! binary (no build step, nothing loaded from elsewhere), that shows the cluster and its jobs
//! by polling the REST API ([`super::rest`]) and acts through it (cancel, savepoint, stop).
//!
//! The page itself needs no token: it holds no data. When the REST API asks for the cluster's
//! token, the page asks the user for it and sends it with every call.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;

const INDEX_HTML: &str = include_str!("dashboard/index.html");
const APP_JS: &str = include_str!("dashboard/app.js");
const STYLE_CSS: &str = include_str!("dashboard/style.css");

/// One embedded file, with its type; never cached stale across JobManager upgrades.
fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
}

/// The dashboard's routes: the page and its script and style sheet.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/assets/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }),
        )
}
