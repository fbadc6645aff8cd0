//! Watches through the real `kube::Client`: field selectors, resume from a
//! version, bookmarks, 410 Expired, timeoutSeconds, and watch faults.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube_emulator::{Emulator, Fault, Match, Resource, Verb};

fn lease(name: &str, holder: &str) -> Lease {
    let mut l = Lease::default();
    l.metadata.name = Some(name.to_owned());
    l.spec = Some(LeaseSpec {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(15),
        ..LeaseSpec::default()
    });
    l
}

async fn set_holder(api: &Api<Lease>, name: &str, holder: &str) -> Lease {
    let mut l = api.get(name).await.expect("get");
    l.spec.as_mut().expect("spec").holder_identity = Some(holder.to_owned());
    api.replace(name, &PostParams::default(), &l)
        .await
        .expect("update")
}

fn rv(l: &Lease) -> String {
    l.metadata.resource_version.clone().expect("rv")
}

fn holder(l: &Lease) -> String {
    l.spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default()
}

/// The next non-bookmark event, failing the test after two seconds.
async fn next_change<S>(stream: &mut S) -> WatchEvent<Lease>
where
    S: futures::Stream<Item = Result<WatchEvent<Lease>, kube::Error>> + Unpin,
{
    loop {
        let item = tokio::time::timeout(Duration::from_secs(2), stream.next())
            .await
            .expect("an event within 2 s")
            .expect("stream still open")
            .expect("no transport error");
        if !matches!(item, WatchEvent::Bookmark(_)) {
            return item;
        }
    }
}

#[tokio::test]
async fn watch_with_field_selector_sees_only_the_named_lease() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    api.create(&PostParams::default(), &lease("a", "x"))
        .await
        .expect("create a");
    api.create(&PostParams::default(), &lease("b", "x"))
        .await
        .expect("create b");
    let wp = WatchParams::default().fields("metadata.name=a").timeout(10);
    let mut stream = api.watch(&wp, "0").await.expect("watch").boxed();
    match next_change(&mut stream).await {
        WatchEvent::Added(l) => assert_eq!(l.metadata.name.as_deref(), Some("a")),
        other => panic!("expected ADDED a, got {other:?}"),
    }
    set_holder(&api, "b", "y").await;
    let a2 = set_holder(&api, "a", "z").await;
    match next_change(&mut stream).await {
        WatchEvent::Modified(l) => {
            assert_eq!(l.metadata.name.as_deref(), Some("a"), "b is filtered out");
            assert_eq!(rv(&l), rv(&a2));
            assert_eq!(holder(&l), "z");
        }
        other => panic!("expected MODIFIED a, got {other:?}"),
    }
    api.delete("a", &Default::default()).await.expect("delete");
    match next_change(&mut stream).await {
        WatchEvent::Deleted(l) => {
            let deleted_rv: u64 = rv(&l).parse().expect("decimal");
            assert!(
                deleted_rv > rv(&a2).parse::<u64>().expect("decimal"),
                "a delete has its own version"
            );
        }
        other => panic!("expected DELETED a, got {other:?}"),
    }
    assert_eq!(
        emu.request_counts().get("w", Verb::Watch, Resource::Lease),
        1
    );
}

#[tokio::test]
async fn watch_resumes_from_a_resource_version() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    let created = api
        .create(&PostParams::default(), &lease("a", "h0"))
        .await
        .expect("create");
    let first = set_holder(&api, "a", "h1").await;
    let second = set_holder(&api, "a", "h2").await;
    let wp = WatchParams::default().fields("metadata.name=a").timeout(10);
    let mut stream = api.watch(&wp, &rv(&created)).await.expect("watch").boxed();
    for expected in [&first, &second] {
        match next_change(&mut stream).await {
            WatchEvent::Modified(l) => {
                assert_eq!(rv(&l), rv(expected));
                assert_eq!(holder(&l), holder(expected));
            }
            other => panic!("expected MODIFIED, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn w2_watch_from_a_compacted_version_gets_410_expired() {
    let emu = Emulator::builder()
        .history_limit(2)
        .start()
        .await
        .expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    let created = api
        .create(&PostParams::default(), &lease("a", "h0"))
        .await
        .expect("create");
    for h in ["h1", "h2", "h3"] {
        set_holder(&api, "a", h).await;
    }
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv(&created))
        .await
        .expect("the watch request itself succeeds")
        .boxed();
    match next_change(&mut stream).await {
        WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(
                status.message.starts_with("too old resource version"),
                "{}",
                status.message
            );
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    let end = tokio::time::timeout(Duration::from_secs(2), stream.next())
        .await
        .expect("ends");
    assert!(end.is_none(), "the server closes the watch after the 410");

    // An explicit compaction expires every older version, the latest included.
    let latest = api.get("a").await.expect("get");
    set_holder(&api, "a", "h4").await;
    emu.compact();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &rv(&latest))
        .await
        .expect("watch")
        .boxed();
    assert!(matches!(next_change(&mut stream).await, WatchEvent::Error(s) if s.code == 410));
}

#[tokio::test]
async fn watch_sends_bookmarks_with_the_current_version() {
    let emu = Emulator::builder()
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    api.create(&PostParams::default(), &lease("a", "h0"))
        .await
        .expect("create");
    let wp = WatchParams::default().fields("metadata.name=a").timeout(10);
    let mut stream = api.watch(&wp, "0").await.expect("watch").boxed();
    let mut saw_added = false;
    let bookmark = loop {
        let ev = tokio::time::timeout(Duration::from_secs(2), stream.try_next())
            .await
            .expect("event in time")
            .expect("no error")
            .expect("open");
        match ev {
            WatchEvent::Added(_) => saw_added = true,
            WatchEvent::Bookmark(b) => break b,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert!(saw_added, "initial ADDED comes before the first bookmark");
    assert_eq!(
        bookmark.metadata.resource_version,
        emu.resource_version().to_string()
    );

    // Without allowWatchBookmarks there are none.
    let quiet = WatchParams::default()
        .fields("metadata.name=none")
        .timeout(1)
        .disable_bookmarks();
    let events: Vec<_> = api.watch(&quiet, "0").await.expect("watch").collect().await;
    assert!(
        events.is_empty(),
        "no bookmarks asked for, none sent: {events:?}"
    );
}

#[tokio::test]
async fn watch_ends_after_timeout_seconds() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    let started = tokio::time::Instant::now();
    let wp = WatchParams::default().timeout(1).disable_bookmarks();
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(3),
        api.watch(&wp, "0").await.expect("watch").collect(),
    )
    .await
    .expect("the server ends the watch");
    assert!(events.is_empty());
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "not before timeoutSeconds"
    );
}

/// A client's `timeoutSeconds` may be any u64: the largest must not overflow the
/// server's clock (it panicked the request's task, and the client saw the
/// connection close without an answer). The watch is accepted with 200 and the
/// server keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_the_largest_timeout_seconds_is_accepted() {
    use std::io::{Read, Write};
    let emu = Emulator::start().await.expect("start");
    let addr = emu.url().trim_start_matches("http://").to_owned();
    let head = tokio::task::spawn_blocking(move || {
        let mut conn = std::net::TcpStream::connect(addr).expect("connect");
        conn.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        conn.write_all(
            b"GET /apis/coordination.k8s.io/v1/namespaces/default/leases?watch=true&timeoutSeconds=18446744073709551615 HTTP/1.1\r\nHost: emulator\r\n\r\n",
        )
        .expect("send");
        let mut buf = [0u8; 512];
        let n = conn.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    })
    .await
    .expect("the reader");
    assert!(head.starts_with("HTTP/1.1 200"), "answer: {head:?}");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    api.create(&PostParams::default(), &lease("after", "a"))
        .await
        .expect("the server still answers");
}

#[tokio::test]
async fn streaming_list_sends_initial_events_then_a_marked_bookmark() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    api.create(&PostParams::default(), &lease("a", "h0"))
        .await
        .expect("create");
    let wp = WatchParams::streaming_lists().timeout(10);
    let mut stream = api.watch(&wp, "").await.expect("watch").boxed();
    assert!(matches!(
        next_change(&mut stream).await,
        WatchEvent::Added(_)
    ));
    let ev = tokio::time::timeout(Duration::from_secs(2), stream.try_next())
        .await
        .expect("in time")
        .expect("ok")
        .expect("open");
    match ev {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
        }
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
}

#[tokio::test]
async fn w1_watch_closed_broken_or_silent_by_fault() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    api.create(&PostParams::default(), &lease("a", "h0"))
        .await
        .expect("create");
    let wp = WatchParams::default().timeout(30).disable_bookmarks();

    // Clean close after 200 ms: the stream ends.
    emu.faults("w")
        .on(Match::verbs(&[Verb::Watch]))
        .times(1)
        .inject(Fault::WatchCloseAfter(Duration::from_millis(200)));
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(2),
        api.watch(&wp, "0").await.expect("watch").collect(),
    )
    .await
    .expect("closed by the fault");
    assert_eq!(events.len(), 1, "the initial ADDED, then the end");

    // Broken connection after 200 ms: the stream ends too (kube treats it as EOF or an error).
    emu.faults("w")
        .on(Match::verbs(&[Verb::Watch]))
        .times(1)
        .inject(Fault::WatchBreakAfter(Duration::from_millis(200)));
    let events: Vec<_> = tokio::time::timeout(
        Duration::from_secs(2),
        api.watch(&wp, "0").await.expect("watch").collect(),
    )
    .await
    .expect("broken by the fault");
    assert!(matches!(events.first(), Some(Ok(WatchEvent::Added(_)))));

    // Silent: a change happens, nothing arrives.
    emu.faults("w")
        .on(Match::verbs(&[Verb::Watch]))
        .times(1)
        .inject(Fault::WatchSilent);
    let mut silent = api.watch(&wp, "0").await.expect("watch").boxed();
    set_holder(&api, "a", "h1").await;
    let got = tokio::time::timeout(Duration::from_millis(300), silent.next()).await;
    assert!(got.is_err(), "a silent watch delivers nothing: {got:?}");

    // A later watch is healthy again and sees the change.
    let mut healthy = api.watch(&wp, "0").await.expect("watch").boxed();
    match next_change(&mut healthy).await {
        WatchEvent::Added(l) => assert_eq!(holder(&l), "h1"),
        other => panic!("expected ADDED, got {other:?}"),
    }
}

#[tokio::test]
async fn drop_connections_breaks_open_watches() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("w").expect("client"), "default");
    let wp = WatchParams::default().timeout(30).disable_bookmarks();
    let mut stream = api.watch(&wp, "0").await.expect("watch").boxed();
    emu.drop_connections();
    let ended = tokio::time::timeout(Duration::from_secs(2), async {
        // Drain until the stream ends or reports the broken connection.
        while let Some(Ok(_)) = stream.next().await {}
    })
    .await;
    assert!(ended.is_ok(), "the watch notices the dropped connection");
}
