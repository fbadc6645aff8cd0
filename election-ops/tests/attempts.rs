//! Every attempt of a write is judged by the guard, and bounded by its margin
//! (`election_ops::client::guarded_client`), against the emulator with the real
//! `kube` client and kube's retries on, as configs from `infer`, `incluster` and
//! kubeconfigs have them. Each test first shows what the plain composition
//! (`ClientBuilder::try_from(config)?.with_layer(&guard)`) lets through.

use std::sync::Arc;
use std::time::{Duration, Instant};

use election_core::{Role, Term, Version};
use election_driver::LeadershipState;
use election_ops::LeadershipView;
use election_ops::client::{WriteTimedOut, guarded_client};
use election_ops::guard::{NotLeader, WriteGuardLayer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_emulator::{Emulator, Match, Resource, Verb};

/// A leader whose deadline is `lease` after the view was made, on the real
/// clock (as a handle's is, once its renewals stop).
#[derive(Clone)]
struct Leads {
    start: Instant,
    lease: Duration,
    state: LeadershipState,
}

impl Leads {
    fn for_(lease: Duration) -> Arc<Self> {
        let mut state = LeadershipState::initial("app".into());
        state.role = Role::Leader;
        state.term = Some(Term {
            transitions: 1,
            version: Version::new("5"),
        });
        Arc::new(Leads {
            start: Instant::now(),
            lease,
            state,
        })
    }
}

impl LeadershipView for Leads {
    fn now(&self) -> election_core::Instant {
        election_core::Instant::from_nanos(self.start.elapsed().as_nanos() as u64)
    }
    fn deadline(&self) -> Option<election_core::Instant> {
        Some(election_core::Instant::from_nanos(
            self.lease.as_nanos() as u64
        ))
    }
    fn state(&self) -> LeadershipState {
        self.state.clone()
    }
}

fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm
}

/// `token`'s config with kube's retries on, as outside the emulator.
fn retrying(emu: &Emulator, token: &str) -> kube::Config {
    let mut config = emu.kube_config(token);
    config.default_retry = true;
    config
}

/// docs/faults.md N18: the server answers a guarded create 429 with
/// `Retry-After: 2`; kube waits and sends it again, after the leadership
/// deadline. Below the guard (the plain composition) the resend is committed;
/// through `guarded_client` the resend passes the guard again and is refused
/// locally, never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n18_kubes_retry_of_a_write_is_judged_by_the_guard_again() {
    let emu = Emulator::start().await.expect("emulator");
    let margin = Duration::from_millis(300);
    for token in ["plain", "guarded"] {
        emu.faults(token)
            .on(Match::verbs(&[Verb::Create]))
            .times(1)
            .too_many_requests(2);
    }

    let view = Leads::for_(Duration::from_millis(1500));
    let guard = WriteGuardLayer::new(Arc::clone(&view)).margin(margin);
    let plain = kube::client::ClientBuilder::try_from(retrying(&emu, "plain"))
        .expect("config")
        .with_layer(&guard)
        .build();
    Api::<ConfigMap>::namespaced(plain, "default")
        .create(&PostParams::default(), &configmap("resent"))
        .await
        .expect("the plain composition resends below the guard");
    assert!(
        view.start.elapsed() > view.lease,
        "resent after the deadline"
    );
    assert!(
        emu.object(Resource::ConfigMap, "default", "resent")
            .is_some()
    );

    let view = Leads::for_(Duration::from_millis(1500));
    let guard = WriteGuardLayer::new(Arc::clone(&view)).margin(margin);
    let client = guarded_client(retrying(&emu, "guarded"), &guard, None).expect("client");
    let refused = Api::<ConfigMap>::namespaced(client, "default")
        .create(&PostParams::default(), &configmap("held"))
        .await
        .expect_err("the resend is judged again");
    let not_leader = election_ops::guard::not_leader(&refused);
    assert_eq!(
        not_leader,
        Some(&NotLeader {
            method: "POST".into(),
            path: "/api/v1/namespaces/default/configmaps".into()
        }),
        "{refused:?}"
    );
    assert!(view.start.elapsed() > view.lease);
    assert_eq!(emu.object(Resource::ConfigMap, "default", "held"), None);
    let counts = emu.request_counts();
    assert_eq!(
        counts.get("guarded", Verb::Create, Resource::ConfigMap),
        1,
        "one attempt reached the server: the 429"
    );
    assert_eq!(
        counts.get("plain", Verb::Create, Resource::ConfigMap),
        2,
        "the plain composition sent it twice"
    );
}

/// docs/faults.md N19: the server holds a guarded create 4 s; it passed the
/// guard with the margin left. The plain composition waits for it and learns
/// of it long after the deadline; `guarded_client` gives it up after the
/// margin, before the deadline, with a typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n19_a_write_the_server_holds_is_given_up_within_the_guards_margin() {
    let emu = Emulator::start().await.expect("emulator");
    let margin = Duration::from_millis(800);
    for token in ["plain", "guarded"] {
        emu.faults(token)
            .on(Match::verbs(&[Verb::Create]))
            .latency(Duration::from_secs(4));
    }

    let view = Leads::for_(Duration::from_millis(1500));
    let guard = WriteGuardLayer::new(Arc::clone(&view)).margin(margin);
    let plain = kube::client::ClientBuilder::try_from(emu.kube_config("plain"))
        .expect("config")
        .with_layer(&guard)
        .build();
    Api::<ConfigMap>::namespaced(plain, "default")
        .create(&PostParams::default(), &configmap("late"))
        .await
        .expect("answered at last");
    assert!(
        view.start.elapsed() > view.lease,
        "answered after the deadline"
    );

    let view = Leads::for_(Duration::from_millis(1500));
    let guard = WriteGuardLayer::new(Arc::clone(&view)).margin(margin);
    let client = guarded_client(emu.kube_config("guarded"), &guard, None).expect("client");
    let sent = Instant::now();
    let error = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &configmap("bounded"))
        .await
        .expect_err("given up");
    let given_up = sent.elapsed();
    assert!(
        given_up >= margin && view.start.elapsed() < view.lease,
        "given up after the margin ({given_up:?}), before the deadline"
    );
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    let mut timed_out = None;
    while let Some(e) = cause {
        timed_out = timed_out.or(e.downcast_ref::<WriteTimedOut>());
        cause = e.source();
    }
    assert_eq!(
        timed_out.map(|t| t.after),
        Some(margin),
        "a typed error: {error:?}"
    );
    // Reads are not bounded by the margin: a read as slow as the margin passes.
    emu.faults("guarded").clear();
    emu.faults("guarded")
        .on(Match::verbs(&[Verb::Get]))
        .latency(margin + Duration::from_millis(200));
    Api::<ConfigMap>::namespaced(client, "default")
        .get_opt("bounded")
        .await
        .expect("a slow read passes");
}
