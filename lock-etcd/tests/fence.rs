//! Fenced transactions on a real etcd (`lock_etcd::testing`): a user's writes
//! commit only while the lock's key is as this node last wrote it, naming it; a
//! takeover, a release, an edit or a deletion fences them off, and nothing of
//! the refused transaction is written.

use election_core::{Config, Lock, LockRecord, Stamp};
use lock_etcd::fence::{Fenced, FencedOp};
use lock_etcd::testing::EtcdServer;

fn held_by(holder: &str, transitions: u32) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        transitions,
        ..LockRecord::default()
    }
}

fn put(key: &str, value: &str) -> FencedOp {
    FencedOp::Put {
        key: key.to_owned(),
        value: value.as_bytes().to_vec(),
    }
}

#[ignore = "needs etcd (Debian's etcd-server: run .ci/install as root), then: cargo test -p lock-etcd -- --ignored"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n16_fenced_writes_commit_only_while_this_node_holds_the_key_as_it_wrote_it() {
    let etcd = EtcdServer::start().await.expect("a throwaway etcd");
    let (a, b) = (etcd.lock("/fence/lock"), etcd.lock("/fence/lock"));
    a.configure(&Config::fast("a"));
    b.configure(&Config::fast("b"));
    let value = |key: &str| {
        let etcd = &etcd;
        let key = key.to_owned();
        async move { etcd.get(&key).await.expect("read") }
    };

    // Nothing written yet: refused locally, nothing sent.
    assert!(matches!(
        a.fenced(&[put("/app/x", "0")]).await,
        Err(Fenced::NotHolding { .. })
    ));

    let created = a.create(&held_by("a", 0)).await.expect("a creates");
    let rev = a.fenced(&[put("/app/x", "1")]).await.expect("a holds it");
    assert!(rev > created.version.as_str().parse::<i64>().unwrap());
    assert_eq!(value("/app/x").await.as_deref(), Some(&b"1"[..]));

    // A renewal of a's own: fenced writes go on at the new revision.
    let renewed = a
        .update(&created.version, &held_by("a", 0))
        .await
        .expect("renew");
    a.fenced(&[
        put("/app/x", "2"),
        FencedOp::Delete {
            key: "/app/y".into(),
        },
    ])
    .await
    .expect("after a's renewal");

    // b takes over: a's writes are fenced off, and none of them lands.
    let taken = b
        .update(&renewed.version, &held_by("b", 1))
        .await
        .expect("takeover");
    match a
        .fenced(&[put("/app/x", "deposed"), put("/app/z", "deposed")])
        .await
    {
        Err(Fenced::Deposed { current, .. }) => {
            assert_eq!(
                current.map(|r| r.to_string()),
                Some(taken.version.to_string())
            );
        }
        other => panic!("a's write after the takeover: {other:?}"),
    }
    assert_eq!(value("/app/x").await.as_deref(), Some(&b"2"[..]));
    assert_eq!(value("/app/z").await, None);
    b.fenced(&[put("/app/x", "3")])
        .await
        .expect("the new holder writes");

    // b releases: nobody's writes pass.
    let mut released = held_by("", 1);
    released.lease_duration_secs = Some(1);
    let gone = b.update(&taken.version, &released).await.expect("release");
    assert!(matches!(
        b.fenced(&[put("/app/x", "4")]).await,
        Err(Fenced::NotHolding { .. })
    ));
    // a takes it back, then a human deletes the key: fenced off again.
    a.update(&gone.version, &held_by("a", 2))
        .await
        .expect("a again");
    a.fenced(&[put("/app/x", "5")])
        .await
        .expect("a holds it again");
    etcd.delete("/fence/lock").await.expect("deleted by hand");
    assert!(matches!(
        a.fenced(&[put("/app/x", "6")]).await,
        Err(Fenced::Deposed { current: None, .. })
    ));
    assert_eq!(value("/app/x").await.as_deref(), Some(&b"5"[..]));
}
