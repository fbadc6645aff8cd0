//! `kubectl elector describe NAME`: everything `get -o wide` knows as
//! `Key: value` lines, the candidates and fences one per line, and the Lease's
//! last Events.

use std::fmt::Write as _;
use std::io::Write as _;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};

use crate::client::{Target, forbidden};
use crate::election::{Election, Gatherer, HolderPod, Scope, Seen};
use crate::error::Error;
use crate::format;
use crate::table;

/// How many Events are shown, the newest.
pub const EVENTS_SHOWN: usize = 20;

/// Describes the election `name` in the target's namespace.
pub async fn run(target: &Target, name: &str) -> Result<(), Error> {
    let ns = target.namespace.clone();
    let mut gatherer = Gatherer::new(target.client.clone());
    let lease = gatherer.lease(&ns, name).await?;
    let scope = Scope::Namespace(ns.clone());
    let elections = gatherer.elections(vec![lease], &scope).await?;
    let events = events(&target.client, &ns, name).await?;
    for note in gatherer.notes() {
        eprintln!("{note}");
    }
    let now = Timestamp::now();
    let mut text = String::new();
    for e in &elections {
        text.push_str(&render(e, events.as_ref(), now));
    }
    let mut stdout = std::io::stdout().lock();
    write!(stdout, "{text}")?;
    stdout.flush()?;
    Ok(())
}

/// One Event as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// When it last happened: `lastTimestamp`, else `eventTime`, else
    /// `creationTimestamp`.
    pub at: Option<Timestamp>,
    /// `eventTime` (microseconds, where `lastTimestamp` has seconds) and the
    /// `resourceVersion`: the order of Events within one second.
    pub tie: (Option<Timestamp>, u64),
    /// `Normal`, `Warning`.
    pub kind: String,
    /// `LeaderElection`.
    pub reason: String,
    /// `reportingComponent`, else `source.component`.
    pub from: String,
    /// `<identity> became leader`.
    pub message: String,
}

/// The Lease's Events, oldest first, the last [`EVENTS_SHOWN`]; `None` when
/// Events may not be read.
async fn events(client: &kube::Client, ns: &str, name: &str) -> Result<Option<Vec<Shown>>, Error> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let lp = ListParams::default().fields(&format!(
        "involvedObject.kind=Lease,involvedObject.name={name}"
    ));
    let list = match api.list(&lp).await {
        Ok(list) => list,
        Err(e) if forbidden(&e) => {
            eprintln!("warning: not allowed to list Events in namespace {ns:?}: Events shows ?");
            return Ok(None);
        }
        Err(source) => {
            return Err(Error::Api {
                what: format!("listing the Events of Lease {ns}/{name}"),
                source,
            });
        }
    };
    let mut shown: Vec<Shown> = list
        .items
        .into_iter()
        .map(|e| Shown {
            tie: (
                e.event_time.as_ref().map(|t| t.0),
                e.metadata
                    .resource_version
                    .as_deref()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
            ),
            at: e
                .last_timestamp
                .map(|t| t.0)
                .or(e.event_time.map(|t| t.0))
                .or(e.metadata.creation_timestamp.map(|t| t.0)),
            kind: e.type_.unwrap_or_default(),
            reason: e.reason.unwrap_or_default(),
            from: e
                .reporting_component
                .filter(|c| !c.is_empty())
                .or(e.source.and_then(|s| s.component))
                .unwrap_or_default(),
            message: e.message.unwrap_or_default(),
        })
        .collect();
    Ok(Some(newest_last(&mut shown)))
}

/// `events` sorted oldest first (within one second, by `eventTime`, then by
/// `resourceVersion`), the last [`EVENTS_SHOWN`].
pub fn newest_last(events: &mut Vec<Shown>) -> Vec<Shown> {
    events.sort_by_key(|e| (e.at, e.tie));
    let skip = events.len().saturating_sub(EVENTS_SHOWN);
    events.split_off(skip)
}

/// `Key:` padded to a column, then `value`.
fn kv(out: &mut String, key: &str, value: String) {
    let key = format!("{key}:");
    let _ = writeln!(out, "{}", format!("{key:<18}{value}").trim_end());
}

/// The description of `e` with its `events` (`None`: not readable).
pub fn render(e: &Election, events: Option<&Vec<Shown>>, now: Timestamp) -> String {
    let mut out = String::new();
    let none = || "<none>".to_owned();
    let when = |t: Option<Timestamp>, ago: Option<i64>| match (t, ago) {
        (Some(t), Some(ago)) => format!("{t} ({} ago)", format::age(ago)),
        _ => none(),
    };
    kv(&mut out, "Name", e.name.clone());
    kv(&mut out, "Namespace", e.namespace.clone());
    kv(&mut out, "Holder", e.holder.clone().unwrap_or_else(none));
    kv(
        &mut out,
        "Holder Pod",
        match &e.pod {
            HolderPod::NoHolder => "-".to_owned(),
            HolderPod::Found { name, phase } => format!("{name} ({phase})"),
            HolderPod::Missing => "missing (no Pod named as the holder)".to_owned(),
            HolderPod::Forbidden => "? (not allowed to read Pods)".to_owned(),
        },
    );
    kv(&mut out, "State", e.state(now).as_str().to_owned());
    kv(&mut out, "Term", format!("{} (leaseTransitions)", e.term));
    kv(
        &mut out,
        "Lease Duration",
        e.lease_duration_secs.map_or_else(none, |s| format!("{s}s")),
    );
    kv(
        &mut out,
        "Renewed",
        when(e.renew_time, e.renewed_ago_millis(now)),
    );
    kv(
        &mut out,
        "Acquired",
        when(e.acquire_time, e.acquired_ago_millis(now)),
    );
    kv(
        &mut out,
        "Strategy",
        e.strategy.clone().unwrap_or_else(none),
    );
    kv(
        &mut out,
        "Preferred Holder",
        e.preferred_holder.clone().unwrap_or_else(none),
    );
    match &e.candidates {
        Seen::Forbidden => kv(
            &mut out,
            "Candidates",
            "? (not allowed to list LeaseCandidates)".into(),
        ),
        Seen::Known(c) if c.is_empty() => kv(&mut out, "Candidates", none()),
        Seen::Known(c) => {
            kv(&mut out, "Candidates", String::new());
            for c in c {
                let emulation = c.emulation_version.as_deref().unwrap_or("<none>");
                let renewed = c.renew_time.map_or_else(none, |t| {
                    format::age(now.as_millisecond() - t.as_millisecond()) + " ago"
                });
                let _ = writeln!(
                    out,
                    "  {}: binaryVersion {}, emulationVersion {emulation}, strategy {}, renewed {renewed}",
                    c.name, c.binary_version, c.strategy
                );
            }
        }
    }
    match &e.fences {
        Seen::Forbidden => kv(
            &mut out,
            "Fence",
            "? (not allowed to list ValidatingAdmissionPolicies)".into(),
        ),
        Seen::Known(f) if f.is_empty() => kv(&mut out, "Fence", none()),
        Seen::Known(f) => {
            kv(&mut out, "Fence", String::new());
            for f in f {
                let _ = writeln!(
                    out,
                    "  binding {} of policy {} ({})",
                    f.binding,
                    f.policy,
                    f.actions.join(", ")
                );
            }
        }
    }
    match events {
        None => kv(&mut out, "Events", "? (not allowed to list Events)".into()),
        Some(events) if events.is_empty() => kv(&mut out, "Events", none()),
        Some(events) => {
            kv(&mut out, "Events", String::new());
            let rows: Vec<Vec<String>> = events
                .iter()
                .map(|ev| {
                    vec![
                        ev.at.map_or_else(
                            || "<unknown>".to_owned(),
                            |t| format::age(now.as_millisecond() - t.as_millisecond()),
                        ),
                        ev.kind.clone(),
                        ev.reason.clone(),
                        ev.from.clone(),
                        ev.message.clone(),
                    ]
                })
                .collect();
            let mut dashes = vec![vec![
                "---".to_owned(),
                "----".to_owned(),
                "------".to_owned(),
                "----".to_owned(),
                "-------".to_owned(),
            ]];
            dashes.extend(rows);
            for l in table::render(&["Age", "Type", "Reason", "From", "Message"], &dashes).lines() {
                out.push_str("  ");
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(secs: Option<i64>, message: &str) -> Shown {
        Shown {
            at: secs.map(|s| Timestamp::from_second(s).expect("a time")),
            tie: (None, 0),
            kind: "Normal".into(),
            reason: "LeaderElection".into(),
            from: "leader-election".into(),
            message: message.into(),
        }
    }

    #[test]
    fn events_are_oldest_first_and_the_last_twenty() {
        let mut events: Vec<Shown> = (0..25)
            .rev()
            .map(|i| ev(Some(i), &format!("m{i}")))
            .collect();
        events.push(ev(None, "no time"));
        let shown = newest_last(&mut events);
        assert_eq!(shown.len(), EVENTS_SHOWN);
        assert_eq!(shown.first().map(|e| e.message.as_str()), Some("m5"));
        assert_eq!(shown.last().map(|e| e.message.as_str()), Some("m24"));
    }

    #[test]
    fn within_one_second_the_event_time_then_the_version_orders() {
        let at = |micros: i64| Some(Timestamp::from_microsecond(micros).expect("a time"));
        let mut events = vec![
            Shown {
                tie: (at(1_900_000), 5),
                ..ev(Some(1), "later")
            },
            Shown {
                tie: (at(1_100_000), 9),
                ..ev(Some(1), "earlier")
            },
            Shown {
                tie: (None, 7),
                ..ev(Some(1), "by version 7")
            },
            Shown {
                tie: (None, 3),
                ..ev(Some(1), "by version 3")
            },
        ];
        let shown: Vec<String> = newest_last(&mut events)
            .into_iter()
            .map(|e| e.message)
            .collect();
        assert_eq!(shown, ["by version 3", "by version 7", "earlier", "later"]);
    }
}
