//! A controller that copies the ConfigMaps labelled `mirror=true` from `source` to
//! `mirror`, reconciling only while it leads; every replica keeps its cache warm.
use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams};
use kube_elector::k8s_openapi::api::core::v1::ConfigMap;
use kube_elector::runtime::{controller::Action, watcher};
use kube_elector::{ElectedController, TermContext, Warm, kube, ops::identity, prelude::*};
use tokio::signal::unix::{SignalKind, signal};

async fn reconcile(source: Arc<ConfigMap>, term: Arc<TermContext>) -> Result<Action, kube::Error> {
    let name = source.metadata.name.clone().unwrap_or_default();
    let copy = serde_json::json!({"metadata": {"labels": {"mirrored-from": "source"}}, "data": source.data});
    // Sent only while this replica leads in `term.term`; else `NotLeader`, nothing sent.
    let copies: Api<ConfigMap> = Api::namespaced(term.client.clone(), "mirror");
    match copies
        .patch(&name, &PatchParams::default(), &Patch::Merge(&copy))
        .await
    {
        Err(kube::Error::Api(e)) if e.code == 404 => {
            let mut new: ConfigMap = serde_json::from_value(copy).expect("a ConfigMap");
            new.metadata.name = Some(name.clone());
            copies.create(&Default::default(), &new).await?;
        }
        result => drop(result?),
    }
    println!("copied {name} in term {}", term.term);
    Ok(Action::await_change())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let identity = identity::from_env()?; // ELECTION_IDENTITY, else POD_NAME or hostname + suffix
    let kube_config = kube::Config::infer().await?; // KUBECONFIG, ~/.kube/config or in-cluster
    let client = kube_elector::client(kube_config.clone())?;
    let sources = Api::<ConfigMap>::namespaced(client.clone(), "source");
    let warm = Warm::spawn(sources, watcher::Config::default().labels("mirror=true"));
    let lock = LeaseLock::new(client, "default", "mirror-controller")?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let handle = ElectedController::new(warm, kube_config).spawn(
        Builder::new(lock, Config::fast(identity)), // a 2 s lease; Config::client_go in production
        |controller, term| {
            let retry = |_: Arc<ConfigMap>, _: &kube::Error, _| {
                Action::requeue(std::time::Duration::from_secs(1))
            };
            controller.run(reconcile, retry, Arc::new(term))
        },
    )?;
    sigterm.recv().await;
    handle.shutdown().await; // no new reconciles, running ones finish, then the release
    Ok(())
}
