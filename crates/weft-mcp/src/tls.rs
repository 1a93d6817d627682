//! The process-wide rustls crypto provider HTTPS needs (ring, as the rest of weft).

/// Installs ring as the process's rustls crypto provider, once; a provider
/// installed before by another part of the process is kept.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
