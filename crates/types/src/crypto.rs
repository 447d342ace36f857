//! The process's one TLS crypto provider: *ring*.
//!
//! Mutual TLS between Hummer's processes (`channels::secure`) and the object-store client of
//! checkpoints and HA (`object_store` over `reqwest`) both use rustls. Both are built on
//! *ring* so that the binary needs no C crypto library built from source (`aws-lc-sys`, which
//! rustls and reqwest pick by default, cost minutes of every clean build). The choice is made
//! here, once.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// The crypto provider every TLS configuration of Hummer is built with.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Installs [`provider`] as the process default, for libraries that build their own TLS
/// configuration from it (the object-store client); a no-op when a default is installed.
pub fn install_process_default() {
    // Refused only when a default is installed already, which is then ring too.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
