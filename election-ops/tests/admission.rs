//! ValidatingAdmissionPolicy matching as the fencing's users write bindings,
//! the same checks (`test_kit::admission`) on the API emulator and on the real
//! kube-apiserver (ignored in the workspace run: it needs the server built by
//! `bash testing/k8s-server/build.sh`; `.ci/run` runs it).

use kube_emulator::Emulator;
use test_kit::admission::{self, object_selector_takes_only_the_labelled_objects};
use test_kit::apiserver::ApiServer;
use test_kit::runtimes::Runtime;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_selector_takes_only_the_labelled_objects_on_the_emulator() {
    let emu = Emulator::start().await.expect("emulator");
    object_selector_takes_only_the_labelled_objects(&emu).await;
}

#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn object_selector_takes_only_the_labelled_objects_on_kube_apiserver() {
    Runtime::Tokio.run(|| object_selector_takes_only_the_labelled_objects(ApiServer::shared()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclude_rules_and_resource_names_narrow_a_policy_on_the_emulator() {
    let emu = Emulator::start().await.expect("emulator");
    admission::exclude_rules_and_resource_names_narrow_a_policy(&emu).await;
}

#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn exclude_rules_and_resource_names_narrow_a_policy_on_kube_apiserver() {
    Runtime::Tokio
        .run(|| admission::exclude_rules_and_resource_names_narrow_a_policy(ApiServer::shared()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_selector_is_refused_by_the_emulator_saying_so() {
    let emu = Emulator::start().await.expect("emulator");
    admission::a_parameter_selector_is_taken_or_refused_saying_so(&emu).await;
}

#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn a_parameter_selector_is_taken_by_kube_apiserver() {
    Runtime::Tokio
        .run(|| admission::a_parameter_selector_is_taken_or_refused_saying_so(ApiServer::shared()));
}
