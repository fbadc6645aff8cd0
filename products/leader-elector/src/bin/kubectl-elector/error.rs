//! What can go wrong, each printed as `error: …` with exit status 1.

use std::path::PathBuf;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Flags that do not go together.
    #[error("{0}")]
    Usage(String),
    /// The kubeconfig named by `--kubeconfig` cannot be read.
    #[error("cannot read the kubeconfig {}: {source}", path.display())]
    KubeconfigFile {
        /// As given.
        path: PathBuf,
        /// kube's error.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// No usable kubeconfig (`KUBECONFIG`, `~/.kube/config`), or a context it
    /// does not have.
    #[error("cannot load the kubeconfig: {0}")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    /// The client cannot be built from the kubeconfig.
    #[error("cannot make a client for the cluster: {0}")]
    Client(#[source] kube::Error),
    /// The Lease named does not exist.
    #[error("Lease {name:?} not found in namespace {namespace:?}")]
    NotFound {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A request the command cannot do without.
    #[error("{what}: {source}")]
    Api {
        /// What was asked (`listing Leases in namespace "x"`).
        what: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// The Lease has no holder: nothing to release.
    #[error("Lease {namespace}/{name} is already released (it has no holder)")]
    AlreadyReleased {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The holder changed between the read and the write: the release is not
    /// the operator's to make any more.
    #[error(
        "Lease {namespace}/{name} changed hands while releasing it: it was held by {before:?}, it is now {}; nothing was written",
        if now.is_empty() { "released".to_owned() } else { format!("held by {now:?}") }
    )]
    HolderChanged {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The holder the release was for.
        before: String,
        /// The holder read after the conflict (`""`: released).
        now: String,
    },
    /// A lock call failed (the release's read or write).
    #[error("{what} Lease {namespace}/{name}: {source}")]
    Lock {
        /// `reading` or `releasing`.
        what: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The lock's classified error.
        #[source]
        source: election_core::LockError,
    },
    /// A name Kubernetes does not accept.
    #[error("{0}")]
    Name(String),
    /// Writing the output failed (a closed pipe).
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}
