//! Server-side printing: the `meta.k8s.io` Table that `kubectl get` asks for
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io,…,application/json`)
//! and prints as it comes, with the columns of the API server's printers
//! (`pkg/printers/internalversion/printers.go`).
//!
//! Only the kinds whose columns the emulator knows are printed: a Lease (NAME,
//! HOLDER, AGE) and a LeaseCandidate (NAME, LEASENAME, BINARYVERSION,
//! EMULATIONVERSION, AGE). Any other kind is answered as plain JSON, which the
//! client takes too (kubectl then prints NAME and AGE from the objects'
//! metadata). A GET of one object, a LIST and the events of a watch
//! (`kubectl get -w`: each a Table of one row, column definitions included)
//! are printed; BOOKMARK and ERROR events are not.
//!
//! `includeObject` says what each row carries besides its cells: `Metadata`
//! (the default: a `PartialObjectMetadata`, which kubectl reads for `-A`,
//! `--show-labels` and `-L`), `Object` (the whole object) or `None`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::resource::Resource;
use crate::store::Reply;
use crate::time::{Timestamp, parse_rfc3339};
use crate::validation::str_at;

/// What each row of a Table carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Include {
    /// Nothing.
    None,
    /// The object's metadata, as a `PartialObjectMetadata`.
    Metadata,
    /// The whole object.
    Object,
}

/// A request's wish for a Table: the `meta.k8s.io` version to answer in and
/// what the rows carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableRequest {
    version: &'static str,
    include: Include,
}

/// One column: its header, what it shows, and how a cell is read from the object.
struct Column {
    name: &'static str,
    description: &'static str,
    /// `name` for the column kubectl uses as the object's name, else empty.
    format: &'static str,
    cell: fn(&Value, Timestamp) -> Value,
}

fn name_cell(obj: &Value, _: Timestamp) -> Value {
    json!(str_at(obj, "/metadata/name"))
}

fn age_cell(obj: &Value, now: Timestamp) -> Value {
    json!(
        parse_rfc3339(str_at(obj, "/metadata/creationTimestamp"))
            .map_or_else(|| "<unknown>".to_owned(), |t| human_duration(now.since(t)))
    )
}

const NAME: Column = Column {
    name: "Name",
    description: "Name must be unique within a namespace.",
    format: "name",
    cell: name_cell,
};

const AGE: Column = Column {
    name: "Age",
    description: "CreationTimestamp is the time the server created the object.",
    format: "",
    cell: age_cell,
};

const LEASE: [Column; 3] = [
    NAME,
    Column {
        name: "Holder",
        description: "holderIdentity contains the identity of the holder of a current lease.",
        format: "",
        cell: |obj, _| json!(str_at(obj, "/spec/holderIdentity")),
    },
    AGE,
];

const LEASE_CANDIDATE: [Column; 5] = [
    NAME,
    Column {
        name: "LeaseName",
        description: "LeaseName is the name of the lease for which this candidate is contending.",
        format: "",
        cell: |obj, _| json!(str_at(obj, "/spec/leaseName")),
    },
    Column {
        name: "BinaryVersion",
        description: "BinaryVersion is the binary version.",
        format: "",
        cell: |obj, _| json!(str_at(obj, "/spec/binaryVersion")),
    },
    Column {
        name: "EmulationVersion",
        description: "EmulationVersion is the emulation version.",
        format: "",
        cell: |obj, _| json!(str_at(obj, "/spec/emulationVersion")),
    },
    AGE,
];

/// The columns of `resource`, where the emulator prints it.
fn columns(resource: Resource) -> Option<&'static [Column]> {
    match resource {
        Resource::Lease => Some(&LEASE),
        Resource::LeaseCandidate => Some(&LEASE_CANDIDATE),
        _ => None,
    }
}

impl TableRequest {
    /// What a GET or LIST with this `Accept` header and `includeObject`
    /// parameter asks for: the first media type of the header the server can
    /// answer decides, as in the API server; `None` when it is plain JSON (or
    /// no header).
    pub(crate) fn of(accept: Option<&str>, include_object: Option<&str>) -> Option<TableRequest> {
        let version = accept?.split(',').find_map(|item| {
            let mut params = item.split(';').map(str::trim);
            let media = params.next().unwrap_or("");
            if !matches!(media, "application/json" | "application/*" | "*/*") {
                return None;
            }
            let (mut table, mut group, mut version) = (false, "", "");
            for param in params {
                match param.split_once('=') {
                    Some(("as", "Table")) => table = true,
                    Some(("g", g)) => group = g,
                    Some(("v", v)) => version = v,
                    _ => {}
                }
            }
            match (table, group, version) {
                (false, _, _) => Some(None),
                (true, "meta.k8s.io", "v1") => Some(Some("v1")),
                (true, "meta.k8s.io", "v1beta1") => Some(Some("v1beta1")),
                // A Table the server does not know: the next type may do.
                (true, _, _) => None,
            }
        })??;
        let include = match include_object {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        };
        Some(TableRequest { version, include })
    }

    /// The answer of a GET (one object) or LIST (`items`) of `resource`, as a
    /// Table when the kind has columns; else `reply` as it was.
    pub(crate) fn print(self, resource: Resource, reply: Reply, now: Timestamp) -> Reply {
        let Some(columns) = columns(resource) else {
            return reply;
        };
        let objects: Vec<&Value> = match reply.body.get("items").and_then(Value::as_array) {
            Some(items) => items.iter().collect(),
            None => vec![&reply.body],
        };
        let mut metadata = json!({});
        for field in ["resourceVersion", "continue", "remainingItemCount"] {
            if let Some(v) = reply.body.get("metadata").and_then(|m| m.get(field)) {
                metadata[field] = v.clone();
            }
        }
        let body = self.table(resource, columns, &objects, metadata, now);
        Reply { body, ..reply }
    }

    /// The object of a watch event of `resource` (ADDED, MODIFIED, DELETED),
    /// as a Table of one row with the column definitions, when the kind has
    /// columns; else the object as it is.
    pub(crate) fn event_object(self, resource: Resource, object: &Value, now: Timestamp) -> Value {
        let Some(columns) = columns(resource) else {
            return object.clone();
        };
        let rv = object.pointer("/metadata/resourceVersion").cloned();
        let metadata = rv.map_or(json!({}), |rv| json!({"resourceVersion": rv}));
        self.table(resource, columns, &[object], metadata, now)
    }

    /// A Table of `objects` with `columns`.
    fn table(
        self,
        resource: Resource,
        columns: &[Column],
        objects: &[&Value],
        metadata: Value,
        now: Timestamp,
    ) -> Value {
        let rows: Vec<Value> = objects
            .iter()
            .map(|obj| {
                let cells: Vec<Value> = columns.iter().map(|c| (c.cell)(obj, now)).collect();
                let mut row = json!({"cells": cells});
                match self.include {
                    Include::None => {}
                    Include::Metadata => {
                        row["object"] = json!({
                            "kind": "PartialObjectMetadata",
                            "apiVersion": format!("meta.k8s.io/{}", self.version),
                            "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
                        });
                    }
                    Include::Object => {
                        let mut whole = (*obj).clone();
                        whole["apiVersion"] = json!(resource.api_version());
                        whole["kind"] = json!(resource.kind());
                        row["object"] = whole;
                    }
                }
                row
            })
            .collect();
        let definitions: Vec<Value> = columns
            .iter()
            .map(|c| {
                let mut d = json!({"name": c.name, "type": "string", "description": c.description, "priority": 0});
                if !c.format.is_empty() {
                    d["format"] = json!(c.format);
                }
                d
            })
            .collect();
        json!({
            "kind": "Table",
            "apiVersion": format!("meta.k8s.io/{}", self.version),
            "metadata": metadata,
            "columnDefinitions": definitions,
            "rows": rows,
        })
    }
}

/// An age as kubectl shows it (`duration.HumanDuration`): `42s` under two
/// minutes, then `5m10s`, `47m`, `3h5m`, `20h`, `3d4h`, `12d`, `2y10d`, `9y`.
fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (minutes, hours) = (secs / 60, secs / 3600);
    let (days, years) = (hours / 24, hours / 24 / 365);
    let with = |big: u64, unit: &str, small: u64, small_unit: &str| {
        if small == 0 {
            format!("{big}{unit}")
        } else {
            format!("{big}{unit}{small}{small_unit}")
        }
    };
    match () {
        _ if secs < 120 => format!("{secs}s"),
        _ if minutes < 10 => with(minutes, "m", secs % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => with(hours, "h", minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => with(days, "d", hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{days}d"),
        _ if hours < 24 * 365 * 8 => with(years, "y", days % 365, "d"),
        _ => format!("{years}y"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn kubectl_asks_for_a_v1_table_and_plain_json_asks_for_none() {
        let wanted = TableRequest::of(Some(KUBECTL), None).expect("a table");
        assert_eq!((wanted.version, wanted.include), ("v1", Include::Metadata));
        assert_eq!(TableRequest::of(Some("application/json"), None), None);
        assert_eq!(TableRequest::of(None, None), None);
        let beta = TableRequest::of(
            Some("application/json;as=Table;v=v9;g=meta.k8s.io, application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            Some("Object"),
        )
        .expect("the second type");
        assert_eq!((beta.version, beta.include), ("v1beta1", Include::Object));
    }

    #[test]
    fn a_candidate_list_prints_the_servers_columns() {
        let list = json!({"kind": "LeaseCandidateList", "metadata": {"resourceVersion": "7"}, "items": [{
            "metadata": {"name": "a", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"leaseName": "lock", "binaryVersion": "1.34.0", "emulationVersion": "1.33.0", "strategy": "OldestEmulationVersion"},
        }]});
        let now = parse_rfc3339("2026-01-01T00:05:10Z").expect("time");
        let wanted = TableRequest::of(Some(KUBECTL), None).expect("a table");
        let table = wanted
            .print(Resource::LeaseCandidate, Reply::new(200, list), now)
            .body;
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| c["name"].as_str().expect("name"))
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "LeaseName",
                "BinaryVersion",
                "EmulationVersion",
                "Age"
            ]
        );
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["a", "lock", "1.34.0", "1.33.0", "5m10s"])
        );
        assert_eq!(table["rows"][0]["object"]["metadata"]["namespace"], "ns");
        assert_eq!(table["metadata"], json!({"resourceVersion": "7"}));
        let untouched = wanted.print(
            Resource::ConfigMap,
            Reply::new(200, json!({"items": []})),
            now,
        );
        assert_eq!(untouched.body, json!({"items": []}));
    }

    #[test]
    fn ages_read_as_kubectl_writes_them() {
        let cases = [
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (310, "5m10s"),
            (2820, "47m"),
            (3 * 3600 + 300, "3h5m"),
            (20 * 3600, "20h"),
            (3 * 86_400 + 4 * 3600, "3d4h"),
            (12 * 86_400, "12d"),
            ((2 * 365 + 10) * 86_400, "2y10d"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (secs, shown) in cases {
            assert_eq!(human_duration(Duration::from_secs(secs)), shown, "{secs}");
        }
    }
}
