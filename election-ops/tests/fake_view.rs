//! The guard and health fed by a fake view: a wedged driver (its deadline stays,
//! its clock runs) — docs/faults.md N5 (pause past the lease: guarded writes refused) and
//! A14 / H6 on the health side.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use election_core::Event;
use election_core::{Instant, Role, Term, Version};
use election_driver::{Change, LeadershipState};
use election_ops::LeadershipView;
use election_ops::guard::{NotLeader, WriteGuardLayer};
use election_ops::health::{Health, Heartbeat, ReadyWhen, Unhealthy};
use hyper::{Method, Request};
use tower::{Layer, Service};

/// A node whose driver published `role` with `deadline`, then froze; the clock is
/// set by the test.
#[derive(Clone)]
struct Fake {
    now: Arc<AtomicU64>,
    deadline: Option<Instant>,
    state: Arc<Mutex<LeadershipState>>,
}

impl Fake {
    fn leader(deadline_ms: u64) -> Self {
        let mut state = LeadershipState::initial("fake".into());
        state.role = Role::Leader;
        state.term = Some(Term {
            transitions: 3,
            version: Version::new("42"),
        });
        state.change = Change::Elector(Event::StartedLeading {
            term: state.term.clone().unwrap(),
        });
        Fake {
            now: Arc::new(AtomicU64::new(0)),
            deadline: Some(Instant::from_millis(deadline_ms)),
            state: Arc::new(Mutex::new(state)),
        }
    }
    fn follower() -> Self {
        Fake {
            now: Arc::new(AtomicU64::new(0)),
            deadline: None,
            state: Arc::new(Mutex::new(LeadershipState::initial("fake".into()))),
        }
    }
    fn at(&self, ms: u64) {
        self.now.store(ms * 1_000_000, Ordering::SeqCst);
    }
}

impl LeadershipView for Fake {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.now.load(Ordering::SeqCst))
    }
    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
    fn state(&self) -> LeadershipState {
        self.state.lock().unwrap().clone()
    }
}

/// Counts what reaches it and records the term header.
#[derive(Clone, Default)]
struct Sink {
    calls: Arc<AtomicU64>,
    last_term: Arc<Mutex<Option<String>>>,
}

impl Service<Request<()>> for Sink {
    type Response = ();
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<(), Self::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: Request<()>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.last_term.lock().unwrap() = req
            .headers()
            .get(election_ops::guard::TERM_HEADER)
            .map(|v| v.to_str().unwrap().to_owned());
        std::future::ready(Ok(()))
    }
}

fn send<S>(svc: &mut S, method: Method) -> Result<(), tower::BoxError>
where
    S: Service<Request<()>, Response = (), Error = tower::BoxError>,
{
    let mut cx = Context::from_waker(Waker::noop());
    let req = Request::builder()
        .method(method)
        .uri("/api/v1/namespaces/default/configmaps")
        .body(())
        .unwrap();
    let mut fut = std::pin::pin!(svc.call(req));
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(r) => r,
        Poll::Pending => panic!("the sink answers at once"),
    }
}

use std::future::Future;

#[test]
fn n5_wedged_driver_guard_closes_at_deadline_minus_margin() {
    let view = Fake::leader(10_000);
    let sink = Sink::default();
    let mut svc = WriteGuardLayer::new(view.clone())
        .margin(Duration::from_secs(1))
        .term_header(true)
        .layer(sink.clone());

    view.at(8_000);
    send(&mut svc, Method::POST).expect("2 s left, margin 1 s: passes");
    assert_eq!(sink.last_term.lock().unwrap().as_deref(), Some("3@42"));
    view.at(9_000);
    let err = send(&mut svc, Method::PUT).expect_err("exactly the margin left: refused");
    assert!(err.downcast_ref::<NotLeader>().is_some());
    // The process was paused past its lease: the state still says Leader.
    view.at(60_000);
    for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        assert!(send(&mut svc, m).is_err());
    }
    assert_eq!(
        sink.calls.load(Ordering::SeqCst),
        1,
        "only the first write was sent"
    );
    send(&mut svc, Method::GET).expect("reads always pass");
    assert_eq!(sink.calls.load(Ordering::SeqCst), 2);
}

#[test]
fn a14_health_reports_a_leader_that_has_not_renewed_past_deadline_plus_tolerance() {
    // A renew hung in a way the driver cannot time out: the state still says
    // Leader, the deadline stays where the last renew put it.
    let view = Fake::leader(10_000);
    let health = Health::new(view.clone()).tolerance(Duration::from_secs(5));
    view.at(9_000);
    assert_eq!(health.liveness(), Ok(()));
    view.at(15_000);
    assert_eq!(health.liveness(), Ok(()), "within the tolerance");
    view.at(15_001);
    assert!(matches!(
        health.liveness(),
        Err(Unhealthy::NotRenewed { .. })
    ));
    let status = health.status();
    assert!(!status.healthy);
    assert!(status.deadline_in_secs.unwrap() < -5.0);
    assert!(
        !status.is_leader,
        "is_leader is time-bounded even when wedged"
    );
}

#[test]
fn a_standby_is_never_unhealthy_and_readiness_follows_the_role() {
    let view = Fake::follower();
    let health = Health::new(view.clone()).ready_when(ReadyWhen::Leader);
    view.at(1_000_000);
    assert_eq!(health.liveness(), Ok(()));
    assert!(health.readiness().is_err());
    let standby = Health::new(view.clone()).ready_when(ReadyWhen::Standby);
    assert!(standby.readiness().is_ok());

    let leader = Fake::leader(10_000);
    let h = Health::new(leader.clone()).ready_when(ReadyWhen::Leader);
    assert!(h.readiness().is_ok());
    leader.at(10_000);
    assert!(h.readiness().is_err(), "not leading past the deadline");
}

#[test]
fn h6_stalled_leader_work_fails_liveness() {
    let view = Fake::leader(u64::MAX / 2_000_000);
    let clock = view.clone();
    let beat = Heartbeat::with_clock(move || clock.now());
    let health = Health::new(view.clone()).heartbeat(beat.clone(), Duration::from_secs(3));
    view.at(2_000);
    beat.beat();
    view.at(5_000);
    assert_eq!(health.liveness(), Ok(()));
    view.at(5_001);
    assert!(matches!(
        health.liveness(),
        Err(Unhealthy::WorkStalled { .. })
    ));
    beat.beat();
    assert_eq!(health.liveness(), Ok(()));
}

type Full = http_body_util::Full<hyper::body::Bytes>;

/// Records each request that reaches it (method, path, JSON body) and answers
/// with the next status of its script (200 once the script is spent).
#[derive(Clone, Default)]
struct BodySink {
    sent: Arc<Mutex<Vec<(Method, String, serde_json::Value)>>>,
    answers: Arc<Mutex<Vec<u16>>>,
}

impl BodySink {
    fn answer(&self, statuses: &[u16]) {
        *self.answers.lock().unwrap() = statuses.iter().rev().copied().collect();
    }
    fn take(&self) -> Vec<(Method, String, serde_json::Value)> {
        std::mem::take(&mut *self.sent.lock().unwrap())
    }
}

impl Service<Request<Full>> for BodySink {
    type Response = hyper::Response<Full>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, req: Request<Full>) -> Self::Future {
        use hyper::body::Body;
        let (method, path) = (req.method().clone(), req.uri().path().to_owned());
        let mut cx = Context::from_waker(Waker::noop());
        let mut body = req.into_body();
        let mut data = Vec::new();
        while let Poll::Ready(Some(Ok(frame))) = std::pin::Pin::new(&mut body).poll_frame(&mut cx) {
            data.extend_from_slice(&frame.into_data().unwrap_or_default());
        }
        let json = serde_json::from_slice(&data).expect("a JSON body");
        self.sent.lock().unwrap().push((method, path, json));
        let status = self.answers.lock().unwrap().pop().unwrap_or(200);
        let answer = hyper::Response::builder()
            .status(status)
            .body(Full::new(format!("answer {status}").into()))
            .unwrap();
        std::future::ready(Ok(answer))
    }
}

/// `TermAnnotationLayer` stamps every write, whatever its verb (docs/faults.md
/// N17): objects and merge-like patches get the annotations merged in, a
/// JSON patch gets `add` operations appended (and, answered 422, is sent once
/// more creating the annotations map behind a `null` test), a delete of one
/// object is preceded by a stamping merge patch (the deletion mark). Reads, a
/// collection's delete and anything sent while not leading pass unchanged.
/// By default the stamp is the holder and the term, the same on every write of
/// the term (H11: a write of what is stored stays a no-op).
#[test]
fn n17_h11_every_write_verb_is_stamped_with_the_term_fixed_for_the_term() {
    every_write_verb_is_stamped(false);
}

/// With write tokens (for a fence with no writer check), each write also
/// carries a token of its own, and a deletion mark's says so.
#[test]
fn n17_with_write_tokens_every_write_verb_is_stamped_with_a_token_of_its_own() {
    every_write_verb_is_stamped(true);
}

fn every_write_verb_is_stamped(write_tokens: bool) {
    use election_ops::stamp::{
        DELETE_MARK, HOLDER_ANNOTATION, TERM_ANNOTATION, TermAnnotationLayer, WRITE_ANNOTATION,
    };
    use http_body_util::BodyExt;
    let view = Fake::leader(10_000);
    let sink = BodySink::default();
    let mut svc = TermAnnotationLayer::new(view.clone())
        .write_tokens(write_tokens)
        .layer(sink.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut send = |method: Method, uri: &str, content_type: &str, body: serde_json::Value| {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", content_type)
            .body(Full::new(body.to_string().into()))
            .unwrap();
        let answer = rt.block_on(svc.call(req)).expect("answered");
        let status = answer.status().as_u16();
        let body = rt
            .block_on(answer.into_body().collect())
            .expect("body")
            .to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    };
    const X: &str = "/api/v1/namespaces/default/configmaps/x";
    let stamp_of = |v: &serde_json::Value| {
        let a = &v["metadata"]["annotations"];
        (
            a[TERM_ANNOTATION].clone(),
            a[HOLDER_ANNOTATION].clone(),
            a[WRITE_ANNOTATION].as_str().unwrap_or("").to_owned(),
        )
    };
    let cm = serde_json::json!({"metadata": {"name": "x"}, "data": {"k": "v"}});

    view.at(1_000);
    let mut tokens = std::collections::HashSet::new();
    for (method, content_type) in [
        (Method::POST, "application/json"),
        (Method::PUT, "application/json"),
        (Method::PATCH, "application/merge-patch+json"),
        (Method::PATCH, "application/strategic-merge-patch+json"),
        (Method::PATCH, "application/apply-patch+yaml"),
    ] {
        send(method.clone(), X, content_type, cm.clone());
        let [(_, _, sent)] = <[_; 1]>::try_from(sink.take()).expect("one request");
        let (term, holder, token) = stamp_of(&sent);
        assert_eq!(
            (term, holder),
            ("3@42".into(), "fake".into()),
            "{method} {content_type}"
        );
        if write_tokens {
            assert!(
                !token.is_empty() && tokens.insert(token),
                "a token of its own"
            );
        } else {
            assert_eq!(token, "", "no token: the stamp is the term's");
            let keys = sent["metadata"]["annotations"].as_object().map(|a| a.len());
            assert_eq!(keys, Some(2), "{sent}");
        }
        assert_eq!(sent["data"]["k"], "v", "the rest is kept");
    }

    // A JSON patch: the operations kept, the stamp added after them.
    let ops = serde_json::json!([{"op": "replace", "path": "/data/k", "value": "w"}]);
    send(Method::PATCH, X, "application/json-patch+json", ops.clone());
    let [(_, _, sent)] = <[_; 1]>::try_from(sink.take()).expect("one request");
    let sent = sent.as_array().expect("operations").clone();
    assert_eq!(sent[0], ops[0]);
    let added: std::collections::BTreeMap<&str, &serde_json::Value> = sent[1..]
        .iter()
        .map(|op| {
            assert_eq!(op["op"], "add");
            (op["path"].as_str().unwrap(), &op["value"])
        })
        .collect();
    let mut paths = vec![
        "/metadata/annotations/kube-elector.dev~1holder",
        "/metadata/annotations/kube-elector.dev~1term",
    ];
    if write_tokens {
        paths.push("/metadata/annotations/kube-elector.dev~1write");
    }
    assert_eq!(added.keys().copied().collect::<Vec<_>>(), paths);
    assert_eq!(
        added["/metadata/annotations/kube-elector.dev~1term"],
        "3@42"
    );

    // Answered 422 (no annotations to add to): sent again, creating the map.
    sink.answer(&[422, 200]);
    let (status, _) = send(Method::PATCH, X, "application/json-patch+json", ops.clone());
    assert_eq!(status, 200);
    let [_, (_, _, second)] = <[_; 2]>::try_from(sink.take()).expect("two requests");
    let second = second.as_array().expect("operations").clone();
    assert_eq!(second[0], ops[0]);
    assert_eq!(
        second[1],
        serde_json::json!({"op": "test", "path": "/metadata/annotations", "value": null})
    );
    assert_eq!(
        (second[2]["op"].as_str(), second[2]["path"].as_str()),
        (Some("add"), Some("/metadata/annotations"))
    );
    assert_eq!(second[2]["value"][TERM_ANNOTATION], "3@42");
    // Both refused 422: the first answer is the one the caller gets.
    sink.answer(&[422, 422]);
    let (status, body) = send(Method::PATCH, X, "application/json-patch+json", ops.clone());
    assert_eq!((status, body.as_str()), (422, "answer 422"));
    assert_eq!(sink.take().len(), 2);
    // Another refusal is not sent again.
    sink.answer(&[403]);
    assert_eq!(
        send(Method::PATCH, X, "application/json-patch+json", ops.clone()).0,
        403
    );
    assert_eq!(sink.take().len(), 1);

    // A delete of one object: the mark, then the delete as it was.
    let options = serde_json::json!({"propagationPolicy": "Background"});
    send(Method::DELETE, X, "application/json", options.clone());
    let [(m1, p1, mark), (m2, p2, delete)] = <[_; 2]>::try_from(sink.take()).expect("two requests");
    assert_eq!((m1, p1.as_str()), (Method::PATCH, X));
    let (term, _, token) = stamp_of(&mark);
    assert_eq!(term, "3@42");
    assert_eq!(token.starts_with(DELETE_MARK), write_tokens, "{token}");
    assert_eq!(
        (m2, p2.as_str(), delete),
        (Method::DELETE, X, options.clone())
    );
    // The mark refused: the delete is not sent, the caller gets the refusal.
    sink.answer(&[403]);
    assert_eq!(
        send(Method::DELETE, X, "application/json", options.clone()).0,
        403
    );
    assert_eq!(sink.take().len(), 1);
    // A dry run must not write: no mark, the delete sent as it is.
    let dry = serde_json::json!({"dryRun": ["All"]});
    send(Method::DELETE, X, "application/json", dry.clone());
    assert_eq!(sink.take(), [(Method::DELETE, X.to_owned(), dry)]);
    // A collection's delete cannot be marked: sent unchanged.
    send(
        Method::DELETE,
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        options.clone(),
    );
    assert_eq!(
        sink.take(),
        [(
            Method::DELETE,
            "/api/v1/namespaces/default/configmaps".to_owned(),
            options.clone()
        )]
    );

    // Past the deadline there is no term: nothing is added (the guard refuses
    // such writes anyway when this layer wraps it).
    view.at(10_000);
    send(Method::POST, X, "application/json", cm.clone());
    send(Method::DELETE, X, "application/json", options.clone());
    assert_eq!(
        sink.take(),
        [
            (Method::POST, X.to_owned(), cm),
            (Method::DELETE, X.to_owned(), options)
        ]
    );
}

/// docs/faults.md H6: the heartbeat is checked only while the leader work of the current
/// term runs (not once it ended by itself, not while draining), and measured from
/// the later of the last beat and the term's start: a beat from an earlier term
/// does not make a new term's work look stalled.
#[test]
fn h6_heartbeat_counts_only_while_this_terms_work_runs_and_from_its_start() {
    let view = Fake::leader(u64::MAX / 2_000_000);
    let clock = view.clone();
    let beat = Heartbeat::with_clock(move || clock.now());
    let health = Health::new(view.clone()).heartbeat(beat.clone(), Duration::from_secs(3));
    let term = view.state().term.expect("a term");
    view.at(1_000);
    beat.beat();
    view.at(4_001);
    assert!(matches!(
        health.liveness(),
        Err(Unhealthy::WorkStalled { .. })
    ));
    // The work ended by itself: nothing runs that could stall.
    view.state.lock().unwrap().change = Change::WorkEnded { term: term.clone() };
    view.at(10_000);
    assert_eq!(health.liveness(), Ok(()));
    // Draining: the work was told to stop; not beating is expected.
    {
        let mut s = view.state.lock().unwrap();
        s.role = Role::Draining;
        s.change = Change::Elector(Event::Draining {
            reason: election_core::StopReason::SteppedDown,
        });
    }
    assert_eq!(health.liveness(), Ok(()));
    // A new term at 20 s; the last beat is from the previous one (1 s).
    let next = Term {
        transitions: 4,
        version: Version::new("50"),
    };
    {
        let mut s = view.state.lock().unwrap();
        s.role = Role::Leader;
        s.term = Some(next.clone());
        s.change = Change::Elector(Event::StartedLeading { term: next });
        s.at = Instant::from_millis(20_000);
    }
    view.at(22_000);
    assert_eq!(
        health.liveness(),
        Ok(()),
        "silent for 2 s of this term, not 21 s since the last term's beat"
    );
    view.at(23_001);
    assert!(matches!(
        health.liveness(),
        Err(Unhealthy::WorkStalled { .. })
    ));
}

/// `leader_election_master_status` is time-bounded: 0 at the deadline even when
/// the driver is wedged and published nothing since it said Leader.
#[test]
fn master_status_turns_0_at_the_deadline_of_a_wedged_driver() {
    let view = Fake::leader(1_000);
    let monitor = election_ops::Monitor::new("leases/default/fenced", "fake");
    monitor.observe(&view.state());
    let mut registry = prometheus_client::registry::Registry::default();
    monitor.register_metrics(&mut registry);
    let series = r#"leader_election_master_status{name="fenced"} "#;
    view.at(999);
    let text = monitor.encode_metrics(&view, &registry).expect("encode");
    assert!(text.contains(&format!("{series}1")), "{text}");
    view.at(1_000);
    let text = monitor.encode_metrics(&view, &registry).expect("encode");
    assert!(text.contains(&format!("{series}0")), "{text}");
}
