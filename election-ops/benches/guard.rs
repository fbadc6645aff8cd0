//! The write guard's own time per request: a guarded call into a service that
//! answers at once, against the same call without the guard.

use std::hint::black_box;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use election_core::{Instant, Role, Term, Version};
use election_driver::LeadershipState;
use election_ops::LeadershipView;
use election_ops::guard::WriteGuardLayer;
use hyper::{Method, Request};
use tower::{Layer, Service};

/// Reads a real monotonic clock, as the driver's handle does.
#[derive(Clone)]
struct View {
    epoch: std::time::Instant,
    deadline: Option<Instant>,
    state: Arc<LeadershipState>,
}

impl LeadershipView for View {
    fn now(&self) -> Instant {
        Instant::from_nanos(self.epoch.elapsed().as_nanos() as u64)
    }
    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
    fn state(&self) -> LeadershipState {
        (*self.state).clone()
    }
}

#[derive(Clone)]
struct Sink;
impl Service<Request<()>> for Sink {
    type Response = ();
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<(), Self::Error>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request<()>) -> Self::Future {
        std::future::ready(Ok(()))
    }
}

fn run<S: Service<Request<()>>>(svc: &mut S, method: &Method) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let req = Request::builder()
        .method(method.clone())
        .uri("/api/v1/namespaces/default/configmaps")
        .body(())
        .expect("valid request");
    let mut fut = std::pin::pin!(svc.call(req));
    matches!(
        std::future::Future::poll(fut.as_mut(), &mut cx),
        Poll::Ready(Ok(_))
    )
}

fn bench(c: &mut Criterion) {
    let mut state = LeadershipState::initial("bench".into());
    state.role = Role::Leader;
    state.term = Some(Term {
        transitions: 1,
        version: Version::new("7"),
    });
    let leader = View {
        epoch: std::time::Instant::now(),
        deadline: Some(Instant::from_secs(1_000_000)),
        state: Arc::new(state),
    };
    let follower = View {
        deadline: None,
        ..leader.clone()
    };
    let mut g = c.benchmark_group("write_guard");
    g.bench_function("baseline_write_unguarded", |b| {
        let mut s = Sink;
        b.iter(|| black_box(run(&mut s, &Method::POST)))
    });
    g.bench_function("write_leader_passes", |b| {
        let mut s = WriteGuardLayer::new(leader.clone())
            .margin(Duration::from_secs(1))
            .layer(Sink);
        b.iter(|| black_box(run(&mut s, &Method::POST)))
    });
    g.bench_function("write_leader_passes_term_header", |b| {
        let mut s = WriteGuardLayer::new(leader.clone())
            .term_header(true)
            .layer(Sink);
        b.iter(|| black_box(run(&mut s, &Method::POST)))
    });
    g.bench_function("write_follower_refused", |b| {
        let mut s = WriteGuardLayer::new(follower.clone()).layer(Sink);
        b.iter(|| black_box(run(&mut s, &Method::POST)))
    });
    g.bench_function("read_passes", |b| {
        let mut s = WriteGuardLayer::new(follower.clone()).layer(Sink);
        b.iter(|| black_box(run(&mut s, &Method::GET)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
