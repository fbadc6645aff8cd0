//! The cluster and namespace, as kubectl picks them: `--kubeconfig` (else
//! `KUBECONFIG`, else `~/.kube/config`), `--context`, `-n` (else the context's
//! namespace, else `default`).

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::cli::Cli;
use crate::error::Error;

/// Where the commands go.
pub struct Target {
    /// The configuration the kubeconfig gives.
    pub config: kube::Config,
    /// A client for reads (kube's default retries).
    pub client: kube::Client,
    /// `-n`, else the context's namespace, else `default`.
    pub namespace: String,
}

impl Target {
    /// Loads the kubeconfig as kubectl would and makes a client.
    pub async fn load(cli: &Cli) -> Result<Target, Error> {
        let options = KubeConfigOptions {
            context: cli.context.clone(),
            cluster: None,
            user: None,
        };
        let config = match &cli.kubeconfig {
            Some(path) => {
                let file_error = |source| Error::KubeconfigFile {
                    path: path.clone(),
                    source,
                };
                let file = Kubeconfig::read_from(path).map_err(file_error)?;
                kube::Config::from_custom_kubeconfig(file, &options)
                    .await
                    .map_err(file_error)?
            }
            None => kube::Config::from_kubeconfig(&options)
                .await
                .map_err(Error::Kubeconfig)?,
        };
        let namespace = cli
            .namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let client = kube::Client::try_from(config.clone()).map_err(Error::Client)?;
        Ok(Target {
            config,
            client,
            namespace,
        })
    }
}

/// Whether `e` is the API server's 403.
pub fn forbidden(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 403)
}

/// Whether `e` is the API server's 404 (a kind it does not serve).
pub fn not_served(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}
