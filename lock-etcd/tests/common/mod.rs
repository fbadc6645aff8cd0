//! What the election tests on etcd share: quick timings, candidates run by the
//! real driver on tokio, a sampler of who leads, the candidates' own reports,
//! and the checks of both against etcd's history of the lock.

#![allow(dead_code)] // each test file uses part of it

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adapter_tokio::TokioRuntime;
use election_core::{Config, Term};
use election_driver::{Builder, Change, Handle};
use lock_etcd::EtcdLock;
use lock_etcd::testing::Revision;

/// Lease 1 s, renew deadline 700 ms, retry period 150 ms, request timeout
/// 300 ms: the quickest timings the configuration rules allow with whole-second
/// leases.
pub const LEASE: Duration = Duration::from_secs(1);
pub const RENEW_DEADLINE: Duration = Duration::from_millis(700);
pub const RETRY: Duration = Duration::from_millis(150);
pub const REQUEST_TIMEOUT: Duration = Duration::from_millis(300);

/// The timings above for candidate `id`.
pub fn config(id: &str) -> Config {
    let mut c = Config::fast(id)
        .timings(LEASE, RENEW_DEADLINE, RETRY)
        .seed(id.len() as u64 * 31 + 7);
    c.request_timeout = REQUEST_TIMEOUT;
    c.validate().expect("valid timings");
    c
}

/// The liveness bound of docs/design.md §1 after a crash (or an outage): the
/// lease, one jittered retry period, one request.
pub fn liveness_bound() -> Duration {
    LEASE + RETRY.mul_f64(1.0 + 1.2) + REQUEST_TIMEOUT
}

/// What a candidate reported (its driver's published states), timed on this
/// process's clock.
#[derive(Clone, Debug)]
pub struct Report {
    pub candidate: usize,
    pub at: Instant,
    pub leading: bool,
    pub term: Option<Term>,
    pub change: Change,
}

/// One term as the reports tell it: from the first report leading in it to the
/// first report that is not (or the crash).
#[derive(Clone, Debug)]
pub struct TermSpan {
    pub candidate: usize,
    pub term: Term,
    pub start: Instant,
    pub end: Instant,
}

type Slots = Arc<Mutex<Vec<Option<Arc<Handle>>>>>;

/// Candidates on one etcd key, with a sampler checking every 5 ms that at most
/// one leads.
pub struct Election {
    pub names: Vec<String>,
    slots: Slots,
    reports: Arc<Mutex<Vec<Report>>>,
    /// Two candidates sampled leading at once: when and who.
    violations: Arc<Mutex<Vec<String>>>,
    /// Per candidate, the last instant it was sampled leading.
    last_leading: Arc<Mutex<Vec<Option<Instant>>>>,
    sampler: tokio::task::JoinHandle<()>,
}

impl Election {
    /// Starts one candidate per lock (named `node-0`, `node-1`, …) on tokio.
    pub fn start(locks: Vec<EtcdLock>) -> Election {
        let n = locks.len();
        let reports = Arc::new(Mutex::new(Vec::new()));
        let names: Vec<String> = (0..n).map(|i| format!("node-{i}")).collect();
        let mut handles = Vec::new();
        for (i, lock) in locks.into_iter().enumerate() {
            let reports = Arc::clone(&reports);
            let handle = Builder::new(lock, config(&names[i]))
                .on_state(move |s| {
                    reports.lock().unwrap().push(Report {
                        candidate: i,
                        at: Instant::now(),
                        leading: s.leading(),
                        term: s.term.clone(),
                        change: s.change.clone(),
                    });
                })
                .spawn(TokioRuntime::current().expect("inside tokio"))
                .expect("valid config");
            handles.push(Some(Arc::new(handle)));
        }
        let slots: Slots = Arc::new(Mutex::new(handles));
        let violations = Arc::new(Mutex::new(Vec::new()));
        let last_leading = Arc::new(Mutex::new(vec![None; n]));
        let sampler = {
            let (slots, violations, last_leading) = (
                Arc::clone(&slots),
                Arc::clone(&violations),
                Arc::clone(&last_leading),
            );
            let started = Instant::now();
            tokio::spawn(async move {
                loop {
                    let handles: Vec<Option<Arc<Handle>>> = slots.lock().unwrap().clone();
                    let now = Instant::now();
                    let leaders: Vec<usize> = handles
                        .iter()
                        .enumerate()
                        .filter(|(_, h)| h.as_ref().is_some_and(|h| h.is_leader()))
                        .map(|(i, _)| i)
                        .collect();
                    drop(handles);
                    for &i in &leaders {
                        last_leading.lock().unwrap()[i] = Some(now);
                    }
                    if leaders.len() > 1 {
                        violations
                            .lock()
                            .unwrap()
                            .push(format!("at {:?}: {leaders:?} lead at once", now - started));
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        };
        Election {
            names,
            slots,
            reports,
            violations,
            last_leading,
            sampler,
        }
    }

    fn handle(&self, i: usize) -> Arc<Handle> {
        self.slots.lock().unwrap()[i].clone().expect("running")
    }

    /// The candidates leading now.
    pub fn leaders(&self) -> Vec<usize> {
        let handles: Vec<Option<Arc<Handle>>> = self.slots.lock().unwrap().clone();
        handles
            .iter()
            .enumerate()
            .filter(|(_, h)| h.as_ref().is_some_and(|h| h.is_leader()))
            .map(|(i, _)| i)
            .collect()
    }

    /// Waits until exactly one candidate leads; its index and how long it took.
    pub async fn one_leader(&self, within: Duration) -> (usize, Duration) {
        let start = Instant::now();
        loop {
            let leaders = self.leaders();
            assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
            if let [i] = leaders[..] {
                return (i, start.elapsed());
            }
            assert!(
                start.elapsed() < within,
                "no leader within {within:?}; reports:\n{}",
                self.report_text()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The last instant candidate `i` was sampled leading.
    pub fn last_sampled_leading(&self, i: usize) -> Option<Instant> {
        self.last_leading.lock().unwrap()[i]
    }

    /// The leadership deadline of candidate `i`, on this process's clock.
    pub fn deadline(&self, i: usize) -> Option<Instant> {
        let h = self.handle(i);
        let (deadline, now) = (h.deadline()?, h.now());
        Some(Instant::now() + deadline.saturating_duration_since(now))
    }

    /// Crashes candidate `i`: its driver stops at once, without a release.
    pub async fn abort(&self, i: usize) {
        let mut handle = self.slots.lock().unwrap()[i].take().expect("running");
        // The sampler may hold a clone for a moment.
        let handle = loop {
            match Arc::try_unwrap(handle) {
                Ok(h) => break h,
                Err(h) => {
                    handle = h;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        };
        handle.abort();
    }

    /// Shuts candidate `i` down gracefully (drain, release).
    pub async fn shutdown(&self, i: usize) {
        let handle = self.slots.lock().unwrap()[i].take().expect("running");
        tokio::time::timeout(Duration::from_secs(10), handle.shutdown())
            .await
            .expect("the shutdown ends");
    }

    /// Shuts every running candidate down, stops the sampler, and checks that
    /// the sampler never saw two leaders; returns every report.
    pub async fn finish(self) -> Vec<Report> {
        let running: Vec<usize> = (0..self.names.len())
            .filter(|&i| self.slots.lock().unwrap()[i].is_some())
            .collect();
        for i in running {
            self.shutdown(i).await;
        }
        self.sampler.abort();
        let violations = self.violations.lock().unwrap().clone();
        assert!(violations.is_empty(), "sampled overlaps: {violations:?}");
        self.reports.lock().unwrap().clone()
    }

    /// Reports whose change is a driver problem (a broken watch…), as text.
    pub fn problems(&self, i: usize) -> Vec<String> {
        self.reports
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.candidate == i)
            .filter_map(|r| match &r.change {
                Change::Problem(p) => Some(p.to_string()),
                _ => None,
            })
            .collect()
    }

    pub fn report_text(&self) -> String {
        self.reports
            .lock()
            .unwrap()
            .iter()
            .map(|r| format!("{} leading={} {:?}\n", r.candidate, r.leading, r.change))
            .collect()
    }
}

/// The terms the reports tell, each closed by the first report of its candidate
/// that is not leading in it (a crash, a stop, a new term).
pub fn term_spans(reports: &[Report]) -> Vec<TermSpan> {
    let mut spans = Vec::new();
    let candidates = reports
        .iter()
        .map(|r| r.candidate)
        .max()
        .map_or(0, |m| m + 1);
    for c in 0..candidates {
        let mut open: Option<TermSpan> = None;
        for r in reports.iter().filter(|r| r.candidate == c) {
            let still = r.leading
                && !matches!(r.change, Change::Aborted)
                && open
                    .as_ref()
                    .is_some_and(|o| Some(&o.term) == r.term.as_ref());
            if still {
                continue;
            }
            if let Some(mut o) = open.take() {
                o.end = r.at;
                spans.push(o);
            }
            if r.leading
                && !matches!(r.change, Change::Aborted)
                && let Some(term) = r.term.clone()
            {
                open = Some(TermSpan {
                    candidate: c,
                    term,
                    start: r.at,
                    end: r.at,
                });
            }
        }
        assert!(
            open.is_none(),
            "candidate {c} still leads after finish: {open:?}"
        );
    }
    spans.sort_by_key(|s| s.start);
    spans
}

/// The candidates' reports never overlap: each term starts after the one
/// before it ended. Returns the spans.
pub fn check_reports_do_not_overlap(reports: &[Report]) -> Vec<TermSpan> {
    let spans = term_spans(reports);
    for pair in spans.windows(2) {
        assert!(
            pair[1].start >= pair[0].end,
            "reported terms overlap: {:?} and {:?}",
            pair[0],
            pair[1]
        );
    }
    spans
}

/// The reported terms against etcd's history of the key:
///
/// - each term's version is a revision at which etcd holds a record of its
///   candidate, and the terms are in the same order by revision as in time;
/// - a term's writes are one unbroken run of revisions: once another candidate
///   (or a release) wrote the lock, no write renews that term again (same
///   holder, same transition count), so no candidate wrote the lock as leader
///   of a term that another had ended;
/// - the transition count never goes down.
///
/// `history` may start late (after a compaction): terms older than it are
/// skipped. A candidate may also appear in the history without a reported term
/// (it acquired and was shut down before it reported leading).
pub fn check_history(history: &[Revision], spans: &[TermSpan], names: &[String]) {
    let revision = |t: &Term| -> i64 { t.version.as_str().parse().expect("decimal revision") };
    let mut by_revision: Vec<&TermSpan> = spans.iter().collect();
    by_revision.sort_by_key(|s| revision(&s.term));
    let by_time: Vec<usize> = spans.iter().map(|s| s.candidate).collect();
    let by_rev: Vec<usize> = by_revision.iter().map(|s| s.candidate).collect();
    assert_eq!(
        by_time, by_rev,
        "terms in time order and in revision order differ"
    );
    let holder = |r: &Revision| -> String {
        r.record
            .as_ref()
            .map(|rec| rec.holder.to_string())
            .unwrap_or_default()
    };
    let transitions = |r: &Revision| r.record.as_ref().map(|rec| rec.transitions);
    let compact: Vec<String> = history
        .iter()
        .map(|r| format!("{}:{}", r.revision, holder(r)))
        .collect();
    let terms: Vec<String> = by_revision
        .iter()
        .map(|s| format!("{}@{}", names[s.candidate], s.term.version))
        .collect();
    let oldest = history.first().map_or(i64::MAX, |r| r.revision);
    for span in &by_revision {
        let at = revision(&span.term);
        if at < oldest {
            continue; // compacted away
        }
        let name = &names[span.candidate];
        let start = history
            .iter()
            .position(|r| r.revision == at)
            .unwrap_or_else(|| {
                panic!("term {name}@{at} is no write in etcd's history {compact:?}")
            });
        assert_eq!(
            &holder(&history[start]),
            name,
            "term {name}@{at}: {compact:?}"
        );
        let term_transitions = transitions(&history[start]);
        let run = history[start..]
            .iter()
            .take_while(|r| &holder(r) == name)
            .count();
        for later in &history[start + run..] {
            assert!(
                !(&holder(later) == name && transitions(later) == term_transitions),
                "revision {} renews the term {name}@{at} after others wrote; terms {terms:?}, history {compact:?}",
                later.revision
            );
        }
    }
    let counts: Vec<u32> = history.iter().filter_map(transitions).collect();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "the transition count went down: {counts:?}"
    );
}

/// An HTTP proxy in front of etcd's gateway for one candidate: it forwards,
/// and on request freezes the watch streams going through it (a stalled view),
/// answers the key-value calls with etcd's `503 no leader` (failed reads and
/// writes), or breaks every watch stream.
pub mod proxy {
    use std::convert::Infallible;
    use std::sync::Arc;

    use bytes::Bytes;
    use http_body_util::combinators::UnsyncBoxBody;
    use http_body_util::{BodyExt, Full, StreamBody};
    use hyper::body::{Frame, Incoming};
    use hyper::service::service_fn;
    use hyper::{Request, Response};
    use hyper_util::client::legacy::Client;
    use hyper_util::client::legacy::connect::HttpConnector;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::net::TcpListener;
    use tokio::sync::{mpsc, watch};

    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    type Body = UnsyncBoxBody<Bytes, BoxError>;
    type Frames = futures_lite::stream::Boxed<Result<Frame<Bytes>, BoxError>>;

    /// What the proxy does.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Mode {
        /// Watch streams forward nothing (their bytes wait).
        pub freeze_watches: bool,
        /// `/v3/kv/*` calls are answered `503` (etcd's `no leader`) unsent.
        pub fail_kv: bool,
    }

    /// A proxy on 127.0.0.1; stops with the test's runtime.
    pub struct Proxy {
        pub port: u16,
        mode: watch::Sender<Mode>,
        /// Bumped to break every open watch stream.
        cuts: watch::Sender<u64>,
    }

    impl Proxy {
        /// Listens on a free port and forwards to `target` (`http://host:port`).
        pub async fn start(target: String) -> Arc<Proxy> {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let port = listener.local_addr().expect("addr").port();
            let (mode, _) = watch::channel(Mode::default());
            let (cuts, _) = watch::channel(0u64);
            let proxy = Arc::new(Proxy { port, mode, cuts });
            let client: Client<HttpConnector, Incoming> =
                Client::builder(TokioExecutor::new()).build(HttpConnector::new());
            let p = Arc::clone(&proxy);
            tokio::spawn(async move {
                while let Ok((io, _)) = listener.accept().await {
                    let (p, client, target) = (Arc::clone(&p), client.clone(), target.clone());
                    tokio::spawn(async move {
                        let service = service_fn(move |req| {
                            let (p, client, target) =
                                (Arc::clone(&p), client.clone(), target.clone());
                            async move { Ok::<_, Infallible>(p.forward(&client, &target, req).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(io), service)
                            .await;
                    });
                }
            });
            proxy
        }

        /// `http://127.0.0.1:<port>`.
        pub fn endpoint(&self) -> String {
            format!("http://127.0.0.1:{}", self.port)
        }

        pub fn set(&self, mode: Mode) {
            self.mode.send_replace(mode);
        }

        /// Breaks every open watch stream (an error mid-body).
        pub fn cut(&self) {
            self.cuts.send_modify(|n| *n += 1);
        }

        async fn forward(
            &self,
            client: &Client<HttpConnector, Incoming>,
            target: &str,
            req: Request<Incoming>,
        ) -> Response<Body> {
            let path = req.uri().path().to_owned();
            let status = |code: u16, body: &str| {
                Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(full(Bytes::from(body.to_owned())))
                    .expect("response")
            };
            if path.starts_with("/v3/kv/") && self.mode.borrow().fail_kv {
                return status(
                    503,
                    r#"{"error":"etcdserver: no leader","code":14,"message":"etcdserver: no leader"}"#,
                );
            }
            let (mut parts, body) = req.into_parts();
            parts.uri = format!("{target}{path}").parse().expect("uri");
            let answer = match client.request(Request::from_parts(parts, body)).await {
                Ok(a) => a,
                Err(e) => return status(502, &format!("{{\"error\":\"proxy: {e}\"}}")),
            };
            let (parts, body) = answer.into_parts();
            if path != "/v3/watch" {
                let bytes = body
                    .collect()
                    .await
                    .map(|c| c.to_bytes())
                    .unwrap_or_default();
                return Response::from_parts(parts, full(bytes));
            }
            let (tx, rx) = mpsc::channel(16);
            let (mut mode, mut cuts) = (self.mode.subscribe(), self.cuts.subscribe());
            cuts.mark_unchanged();
            tokio::spawn(pump(body, tx, mode.clone(), cuts));
            let _ = mode.borrow_and_update();
            let frames: Frames = Box::pin(futures_lite::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|f| (f, rx))
            }));
            Response::from_parts(parts, BodyExt::boxed_unsync(StreamBody::new(frames)))
        }
    }

    fn full(bytes: Bytes) -> Body {
        BodyExt::boxed_unsync(Full::new(bytes).map_err(|never| match never {}))
    }

    fn cut_error() -> BoxError {
        BoxError::from(String::from("watch cut by the proxy"))
    }

    /// Forwards a watch's frames, holding them while frozen, until the stream
    /// ends or is cut.
    async fn pump(
        mut body: Incoming,
        tx: mpsc::Sender<Result<Frame<Bytes>, BoxError>>,
        mut mode: watch::Receiver<Mode>,
        mut cuts: watch::Receiver<u64>,
    ) {
        loop {
            // A cut wins over frames already waiting: it breaks the stream at
            // once, handing on nothing more.
            let frame = tokio::select! {
                biased;
                _ = cuts.changed() => None,
                f = body.frame() => f,
            };
            let Some(Ok(frame)) = frame else {
                let _ = tx.send(Err(cut_error())).await;
                return;
            };
            while mode.borrow_and_update().freeze_watches {
                tokio::select! {
                    biased;
                    _ = cuts.changed() => {
                        let _ = tx.send(Err(cut_error())).await;
                        return;
                    }
                    r = mode.changed() => if r.is_err() { return },
                }
            }
            if tx.send(Ok(frame)).await.is_err() {
                return;
            }
        }
    }
}
