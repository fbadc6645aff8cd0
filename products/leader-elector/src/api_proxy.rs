//! `run --api-proxy`: the Kubernetes API served to the child on loopback,
//! through the sidecar's guarded, stamped client ([`election_ops::proxy`]).
//!
//! The listener is bound before the election starts, and the child's kubeconfig
//! written, so the child (started once this node leads) finds both. The child
//! gets `KUBECONFIG` naming that file (server `http://<addr>`, no credentials:
//! the sidecar's replace them, the namespace of the sidecar's kube config), and
//! no `KUBERNETES_SERVICE_HOST` or `KUBERNETES_SERVICE_PORT`: a client that
//! would fall back to the in-cluster configuration (HTTPS to the API server with
//! the Pod's token) fails loudly instead of writing past the proxy. Every
//! client that reads a kubeconfig reads `KUBECONFIG` first (kubectl, client-go's
//! default loading rules and controller-runtime, the Python, Java and kube-rs
//! clients).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use election_driver::Handle;
use election_ops::client::guarded_client;
use election_ops::guard::WriteGuardLayer;
use election_ops::proxy::ApiProxy;
use election_ops::stamp::TermAnnotationLayer;

/// The variables the child does not get with the proxy: those of the
/// in-cluster configuration, which would bypass it.
pub(crate) const IN_CLUSTER_VARS: [&str; 2] =
    ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"];

/// The proxy's listener and the child's kubeconfig, made before the election
/// starts; removed (the file and its directory) when dropped.
pub(crate) struct ProxySetup {
    /// Until the proxy serves on it.
    listener: Option<tokio::net::TcpListener>,
    /// The bound address.
    addr: SocketAddr,
    /// The child's kubeconfig.
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Drop for ProxySetup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why the proxy could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The address could not be bound.
    #[error("failed to listen on {addr} for --api-proxy: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The child's kubeconfig could not be written.
    #[error("failed to write the child's kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The proxy's client could not be built.
    #[error("failed to build the API proxy's client: {0}")]
    Client(#[from] kube::Error),
}

impl ProxySetup {
    /// Binds `addr` and writes the child's kubeconfig, namespace `namespace`,
    /// in a directory of this process's under the temporary directory.
    pub(crate) async fn new(addr: SocketAddr, namespace: &str) -> Result<Self, ProxyError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ProxyError::Listen { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| ProxyError::Listen { addr, source })?;
        let dir = std::env::temp_dir().join(format!("leader-elector-{}", std::process::id()));
        let kubeconfig = dir.join("kubeconfig");
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&kubeconfig, kubeconfig_text(addr, namespace)));
        if let Err(source) = written {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(ProxyError::Kubeconfig {
                path: kubeconfig,
                source,
            });
        }
        Ok(ProxySetup {
            listener: Some(listener),
            addr,
            kubeconfig,
            dir,
        })
    }

    /// Serves the API on the listener, through a client of `config` whose
    /// writes pass the guard of `handle` and carry its term's stamp; kube's
    /// own retries off (the child's client decides). Runs on a task of its own.
    pub(crate) fn serve(
        &mut self,
        mut config: kube::Config,
        handle: &Arc<Handle>,
    ) -> Result<(), ProxyError> {
        config.default_retry = false;
        let guard = WriteGuardLayer::new(Arc::clone(handle));
        let stamp = TermAnnotationLayer::new(Arc::clone(handle));
        let client = guarded_client(config, &guard, Some(&stamp))?;
        if let Some(listener) = self.listener.take() {
            tokio::spawn(ApiProxy::new(client).serve(listener));
        }
        tracing::info!(addr = %self.addr, kubeconfig = %self.kubeconfig.display(), "serving the Kubernetes API to the child");
        Ok(())
    }

    /// The kubeconfig's path.
    pub(crate) fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
}

/// The child's kubeconfig: the proxy as its server, no credentials.
fn kubeconfig_text(addr: SocketAddr, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
  - name: leader-elector
    cluster:
      server: http://{addr}
users:
  - name: leader-elector
    user: {{}}
contexts:
  - name: leader-elector
    context:
      cluster: leader-elector
      user: leader-elector
      namespace: {namespace}
current-context: leader-elector
"
    )
}
