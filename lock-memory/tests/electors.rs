//! Stories of a small cluster: electors from `election-core` over one
//! `MemoryStore`, driven in virtual time through the blocking calls (faults
//! without latency need no timer). After every step, at most one elector may
//! believe it leads.

use election_core::WallTime;
use election_core::{Config, Elector, Event, Instant, LockError, OpKind};
use lock_memory::{Faults, ManualClock, MemoryLock, MemoryStore};

struct Node {
    elector: Elector,
    lock: MemoryLock,
    started: u32,
    stopped: u32,
}

impl Node {
    fn new(store: &MemoryStore, name: &str, seed: u64) -> Self {
        let mut config = Config::fast(name);
        config.seed = Some(seed);
        Node {
            elector: Elector::new(config, Instant::ZERO).expect("the fast preset is valid"),
            lock: store.client(name),
            started: 0,
            stopped: 0,
        }
    }

    /// Runs the elector's calls against the store and takes its events until it is idle.
    fn drain(&mut self, now: Instant) {
        loop {
            let mut busy = false;
            while let Some(action) = self.elector.poll_action() {
                busy = true;
                let result = self.lock.blocking_call(&action);
                let op = action.op();
                self.elector.handle(op.answer(result), now);
            }
            while let Some(event) = self.elector.poll_event() {
                busy = true;
                match event {
                    Event::StartedLeading { .. } => self.started += 1,
                    Event::StoppedLeading { .. } => self.stopped += 1,
                    Event::Draining { .. } => self.elector.work_stopped(now),
                    _ => {}
                }
            }
            if !busy {
                return;
            }
        }
    }
}

/// Steps the cluster from timeout to timeout until `until`, calling `hook` at each
/// step before the electors run, and checking safety after it.
fn run(nodes: &mut [Node], until: Instant, seed: u64, mut hook: impl FnMut(Instant)) {
    let mut now = Instant::ZERO;
    nodes.iter_mut().for_each(|n| n.drain(now));
    while let Some(next) = nodes.iter().filter_map(|n| n.elector.poll_timeout()).min() {
        if next > until {
            break;
        }
        now = next.max(now);
        hook(now);
        for n in nodes.iter_mut() {
            n.elector.handle_timeout(now);
            n.drain(now);
        }
        let leaders = nodes.iter().filter(|n| n.elector.is_leader(now)).count();
        assert!(leaders <= 1, "seed {seed}: {leaders} leaders at {now}");
    }
}

#[test]
fn n9_a_follower_that_can_read_but_not_write_never_leads() {
    let store = MemoryStore::with_seed(1);
    let mut nodes = [Node::new(&store, "a", 1), Node::new(&store, "b", 2)];
    let forbidden = LockError::Forbidden {
        message: "update leases is forbidden".into(),
    };
    let plan = Faults::none()
        .errors(1.0, vec![forbidden])
        .only(&[OpKind::Create, OpKind::Update]);
    store.faults("b").set(plan).unwrap();
    let mut partitioned = false;
    run(&mut nodes, Instant::from_secs(60), 1, |now| {
        if now >= Instant::from_secs(5) && !partitioned {
            store.partition("a");
            partitioned = true;
        }
    });
    assert_eq!(nodes[0].started, 1, "a led until it was cut off");
    assert_eq!(nodes[0].stopped, 1);
    assert_eq!(nodes[1].started, 0, "b never leads");
    assert!(
        store.calls("b").get > 0 && store.calls("b").update > 0,
        "b kept trying"
    );
    assert!(store.write_log().iter().all(|w| &*w.client == "a"));
}

#[test]
fn n7_the_leader_partitioned_for_20s_hands_over_and_rejoins_as_follower() {
    let store = MemoryStore::with_seed(2);
    let mut nodes = [
        Node::new(&store, "a", 1),
        Node::new(&store, "b", 2),
        Node::new(&store, "c", 3),
    ];
    let (cut, heal) = (Instant::from_secs(10), Instant::from_secs(30));
    let clock = ManualClock::new(WallTime::new(0, 0));
    clock.install(&store);
    let mut step = 0;
    run(&mut nodes, Instant::from_secs(60), 2, |now| {
        // The store's wall clock follows virtual time.
        clock.set(WallTime::new(0, 0));
        clock.advance(now.since_epoch());
        if now >= cut && step == 0 {
            store.partition("a");
            step = 1;
        } else if now >= heal && step == 1 {
            store.heal("a");
            step = 2;
        }
    });
    assert_eq!((nodes[0].started, nodes[0].stopped), (1, 1));
    assert_eq!(nodes[1].started + nodes[2].started, 1, "one takeover");
    let log = store.write_log();
    let last_by_a = log.iter().rposition(|w| &*w.client == "a").unwrap();
    let first_other = log.iter().position(|w| &*w.client != "a").unwrap();
    assert!(
        last_by_a < first_other,
        "a never wrote again after the takeover"
    );
    let (a_left, took) = (log[last_by_a].wall, log[first_other].wall);
    assert!(
        took.unix_secs - a_left.unix_secs >= 2,
        "the takeover waited a lease (2 s) after a's last write: {a_left:?} -> {took:?}"
    );
}

#[test]
fn seeded_chaos_never_gives_two_leaders() {
    let mut takeovers = 0;
    for seed in 0..20 {
        let store = MemoryStore::with_seed(seed);
        let names = ["a", "b", "c"];
        let mut nodes: Vec<Node> = names
            .iter()
            .zip(1..)
            .map(|(n, i)| Node::new(&store, n, seed * 10 + i))
            .collect();
        for n in names {
            let plan = Faults::none()
                .errors(0.15, vec![])
                .lost_answers(0.15)
                .stale_reads(0.15);
            store.faults(n).set(plan).unwrap();
        }
        // Every 7 s, partition or heal someone, chosen by the seed.
        let mut next_fault = Instant::from_secs(7);
        let mut pick = seed;
        run(&mut nodes, Instant::from_secs(120), seed, |now| {
            while now >= next_fault {
                pick = pick
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let victim = names[(pick >> 33) as usize % names.len()];
                if store.faults(victim).partitioned().is_some() {
                    store.heal(victim);
                } else {
                    store.partition(victim);
                }
                next_fault = next_fault + std::time::Duration::from_secs(7);
            }
        });
        let started: u32 = nodes.iter().map(|n| n.started).sum();
        assert!(started >= 1, "seed {seed}: nobody ever led");
        takeovers += started - 1;
        for (n, name) in nodes.iter().zip(names) {
            assert!(
                n.started == n.stopped || n.started == n.stopped + 1,
                "seed {seed}: {name} started {} and stopped {}",
                n.started,
                n.stopped
            );
        }
    }
    assert!(takeovers > 10, "the faults forced takeovers: {takeovers}");
}
