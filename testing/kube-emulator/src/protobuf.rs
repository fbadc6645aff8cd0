//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded
//! into the JSON that the rest of the server handles.
//!
//! kubectl sends its typed writes (`kubectl create namespace`, `kubectl create
//! configmap`) as protobuf. Such a body is the API server's envelope: the magic
//! `k8s\0`, then a `runtime.Unknown` whose `typeMeta` names the object's
//! `apiVersion` and `kind` and whose `raw` holds the object. This module decodes
//! the wire format by hand, with the field tables of [`crate::schema`] (the
//! field numbers of the `generated.proto` files of `k8s.io/apimachinery`
//! and `k8s.io/api`, shared with the JSON unknown-field check), and only
//! these kinds:
//!
//! - core/v1 `ConfigMap`: `metadata`, `data`, `binaryData` (base64 in JSON),
//!   `immutable`;
//! - core/v1 `Namespace`: `metadata`, `spec.finalizers`;
//! - core/v1 `Node`: `metadata`, `spec` (`podCIDR`, `podCIDRs`, `providerID`,
//!   `unschedulable`, `taints` with `key`, `value`, `effect`);
//! - coordination.k8s.io/v1 `Lease`: `metadata` and the whole `spec`, its
//!   `MicroTime`s written as the emulator writes them (`2006-01-02T15:04:05.000000Z`);
//! - coordination.k8s.io/v1beta1 `LeaseCandidate`: `metadata` and the whole
//!   `spec`, as client-go's leader election sends it.
//!
//! Of `ObjectMeta` it keeps `name`, `generateName`, `namespace`, `uid`,
//! `resourceVersion`, `generation`, `labels`, `annotations`, `ownerReferences`
//! and `finalizers`. Every other field (`managedFields`, the timestamps the
//! server sets, a `status`: the fields the table marks opaque, and fields
//! added after it was written) is skipped by its wire type. As Go's JSON does for a field without a pointer, an empty
//! string, a zero or a `false` is left out; a pointer field (all of a Lease's
//! `spec`, `immutable`) is kept whenever it was sent.
//!
//! Refused, with a `Status` as the server words its other failures: any other
//! kind, and a payload that is compressed (`contentEncoding`) or not protobuf
//! (`contentType`), with 415 `UnsupportedMediaType` naming it; bytes that are
//! not the envelope or not protobuf (a truncated varint, a length past the end,
//! a field of the wrong wire type, a string that is not UTF-8), with 400.
//! Answers stay JSON: kubectl asks for
//! `application/vnd.kubernetes.protobuf,application/json` and takes either.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use crate::resource::Resource;
use crate::schema::{Schema, Shape};
use crate::status::ApiError;
use crate::time::{Timestamp, format_micro_time};

/// The media type of a protobuf body.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// What every protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

/// Why bytes are not the protobuf they should be (answered with 400).
#[derive(Debug)]
struct Malformed(String);

type Decoded<T> = Result<T, Malformed>;

/// Where a field sits, for error messages: `ObjectMeta.labels`.
#[derive(Debug, Clone, Copy)]
struct At(&'static str, &'static str);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// One field's value as it is on the wire. The fixed-width values are only
/// ever skipped: no field decoded here has them.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

impl<'a> Wire<'a> {
    fn bytes(self, at: At) -> Decoded<&'a [u8]> {
        match self {
            Wire::Bytes(b) => Ok(b),
            _ => Err(Malformed(format!("{at} is not length-delimited"))),
        }
    }

    fn string(self, at: At) -> Decoded<String> {
        let bytes = self.bytes(at)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| Malformed(format!("{at} is not UTF-8")))
    }

    fn varint(self, at: At) -> Decoded<u64> {
        match self {
            Wire::Varint(v) => Ok(v),
            _ => Err(Malformed(format!("{at} is not a varint"))),
        }
    }
}

/// Reads the fields of one message, in order.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Decoded<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some((&byte, rest)) = self.buf.split_first() else {
                return Err(Malformed(
                    "a varint runs past the end of its message".into(),
                ));
            };
            self.buf = rest;
            if i == 9 && byte > 1 {
                return Err(Malformed("a varint is longer than 64 bits".into()));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Malformed("a varint is longer than ten bytes".into()))
    }

    fn take(&mut self, len: u64) -> Decoded<&'a [u8]> {
        match usize::try_from(len) {
            Ok(n) if n <= self.buf.len() => {
                let (head, rest) = self.buf.split_at(n);
                self.buf = rest;
                Ok(head)
            }
            _ => Err(Malformed(format!(
                "a field of {len} bytes runs past the end of its message ({} bytes left)",
                self.buf.len()
            ))),
        }
    }

    /// The next field's number and value; `None` at the end of the message.
    fn field(&mut self) -> Decoded<Option<(u64, Wire<'a>)>> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 {
            return Err(Malformed("a field has the number 0".into()));
        }
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Fixed64
            }
            2 => {
                let len = self.varint()?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            other => {
                return Err(Malformed(format!(
                    "field {number} has wire type {other}, which no Kubernetes object uses"
                )));
            }
        };
        Ok(Some((number, wire)))
    }
}

// Field numbers from the generated.proto files named in the module doc.

/// `runtime.TypeMeta`.
static TYPE_META: Schema = Schema {
    name: "TypeMeta",
    fields: &[(1, "apiVersion", Shape::Str), (2, "kind", Shape::Str)],
};

/// `meta/v1.MicroTime` (a `Timestamp`).
static MICRO_TIME: Schema = Schema {
    name: "MicroTime",
    fields: &[(1, "seconds", Shape::Int64), (2, "nanos", Shape::Int32Kept)],
};

/// The message of each kind decoded; `None` for a kind that is not (Events:
/// no client sends them as protobuf to the emulator, and their `metav1.Time`
/// fields are opaque in [`crate::schema`]; the workload and RBAC kinds:
/// `kubectl apply` sends JSON, and their tables carry no field numbers).
fn schema_of(resource: Resource) -> Option<&'static Schema> {
    match resource {
        Resource::Lease
        | Resource::LeaseCandidate
        | Resource::ConfigMap
        | Resource::Namespace
        | Resource::Node => Some(crate::schema::of(resource)),
        Resource::Event
        | Resource::EventV1
        | Resource::ValidatingAdmissionPolicy
        | Resource::ValidatingAdmissionPolicyBinding => None,
        #[cfg(feature = "workloads")]
        Resource::ServiceAccount
        | Resource::Role
        | Resource::RoleBinding
        | Resource::Deployment
        | Resource::PodDisruptionBudget => None,
    }
}

/// The slot of a list or map field, created empty on its first entry.
fn slot<'m>(out: &'m mut Map<String, Value>, name: &str, empty: fn() -> Value) -> &'m mut Value {
    out.entry(name.to_owned()).or_insert_with(empty)
}

/// Decodes the fields of `schema` in `bytes` into `out`. A field sent twice
/// behaves as protobuf says: the last scalar wins, lists and maps add up,
/// messages merge.
fn decode_into(schema: &Schema, bytes: &[u8], out: &mut Map<String, Value>) -> Decoded<()> {
    let mut reader = Reader { buf: bytes };
    while let Some((number, wire)) = reader.field()? {
        let Some(&(_, name, shape)) = schema.fields.iter().find(|(n, _, _)| *n == number) else {
            continue;
        };
        let at = At(schema.name, name);
        let value = match shape {
            Shape::Str => Some(wire.string(at)?)
                .filter(|s| !s.is_empty())
                .map(Value::from),
            Shape::StrKept => Some(Value::from(wire.string(at)?)),
            // Two's complement: the cast is the protobuf int64.
            Shape::Int64 => Some(wire.varint(at)? as i64)
                .filter(|&n| n != 0)
                .map(Value::from),
            // An int32 is sign-extended to 64 bits on the wire; the low half is the value.
            Shape::Int32 => Some(wire.varint(at)? as i32)
                .filter(|&n| n != 0)
                .map(Value::from),
            Shape::Int32Kept => Some(Value::from(wire.varint(at)? as i32)),
            Shape::Bool => (wire.varint(at)? != 0).then_some(Value::Bool(true)),
            Shape::BoolKept => Some(Value::Bool(wire.varint(at)? != 0)),
            // Standard base64 with padding, as Go's JSON writes `[]byte`.
            Shape::Base64 => Some(Value::from(STANDARD.encode(wire.bytes(at)?))),
            Shape::MicroTime => Some(Value::from(micro_time(wire.bytes(at)?)?)),
            Shape::Strings => {
                let item = Value::from(wire.string(at)?);
                if let Value::Array(items) = slot(out, name, || Value::Array(Vec::new())) {
                    items.push(item);
                }
                continue;
            }
            Shape::Map(entry) => {
                let mut kv = Map::new();
                decode_into(entry, wire.bytes(at)?, &mut kv)?;
                let key = match kv.remove("key") {
                    Some(Value::String(k)) => k,
                    _ => String::new(),
                };
                let value = kv.remove("value").unwrap_or_else(|| Value::from(""));
                if let Value::Object(map) = slot(out, name, || Value::Object(Map::new())) {
                    map.insert(key, value);
                }
                continue;
            }
            Shape::Message(inner) => {
                if let Value::Object(fields) = slot(out, name, || Value::Object(Map::new())) {
                    decode_into(inner, wire.bytes(at)?, fields)?;
                }
                continue;
            }
            // Known, and the server's to set: skipped as an unknown field is.
            // Opaque, and the shapes of JSON-only kinds (`schema_of` is `None`).
            Shape::Opaque => continue,
            #[cfg(feature = "workloads")]
            Shape::IntOrStr | Shape::Quantity => continue,
            Shape::Messages(inner) => {
                let mut fields = Map::new();
                decode_into(inner, wire.bytes(at)?, &mut fields)?;
                if let Value::Array(items) = slot(out, name, || Value::Array(Vec::new())) {
                    items.push(Value::Object(fields));
                }
                continue;
            }
        };
        match value {
            Some(v) => out.insert(name.to_owned(), v),
            None => out.remove(name),
        };
    }
    Ok(())
}

/// A `MicroTime` message as the emulator writes it: `2006-01-02T15:04:05.000000Z`,
/// within the range of a protobuf `Timestamp` (years 1 to 9999).
fn micro_time(bytes: &[u8]) -> Decoded<String> {
    const SECONDS: std::ops::RangeInclusive<i64> = -62_135_596_800..=253_402_300_799;
    let mut fields = Map::new();
    decode_into(&MICRO_TIME, bytes, &mut fields)?;
    let secs = fields.get("seconds").and_then(Value::as_i64).unwrap_or(0);
    let nanos = fields.get("nanos").and_then(Value::as_i64).unwrap_or(0);
    if !SECONDS.contains(&secs) {
        return Err(Malformed(format!(
            "MicroTime.seconds is {secs}, outside the years 1 to 9999"
        )));
    }
    match u32::try_from(nanos) {
        Ok(nanos) if nanos < 1_000_000_000 => Ok(format_micro_time(Timestamp { secs, nanos })),
        _ => Err(Malformed(format!(
            "MicroTime.nanos is {nanos}, outside 0..1000000000"
        ))),
    }
}

/// The `runtime.Unknown` envelope.
struct Envelope<'a> {
    type_meta: Map<String, Value>,
    raw: &'a [u8],
    content_encoding: String,
    content_type: String,
}

fn envelope(bytes: &[u8]) -> Decoded<Envelope<'_>> {
    let mut env = Envelope {
        type_meta: Map::new(),
        raw: &[],
        content_encoding: String::new(),
        content_type: String::new(),
    };
    let mut reader = Reader { buf: bytes };
    while let Some((number, wire)) = reader.field()? {
        match number {
            1 => decode_into(
                &TYPE_META,
                wire.bytes(At("Unknown", "typeMeta"))?,
                &mut env.type_meta,
            )?,
            2 => env.raw = wire.bytes(At("Unknown", "raw"))?,
            3 => env.content_encoding = wire.string(At("Unknown", "contentEncoding"))?,
            4 => env.content_type = wire.string(At("Unknown", "contentType"))?,
            _ => {}
        }
    }
    Ok(env)
}

fn bad(why: impl fmt::Display) -> ApiError {
    ApiError::bad_request(format!(
        "error decoding the request body as protobuf: {why}"
    ))
}

/// Decodes a protobuf request body into the JSON object the store takes,
/// with `apiVersion` and `kind` from the envelope: 400 for bytes that are not
/// the envelope or not protobuf, 415 for a kind or payload it does not decode.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let Some(unknown) = body.strip_prefix(MAGIC) else {
        return Err(bad(r#"the body does not start with the magic "k8s\x00""#));
    };
    let env = envelope(unknown).map_err(|Malformed(why)| bad(why))?;
    let text = |field: &str| {
        env.type_meta
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if kind.is_empty() {
        return Err(bad("the envelope names no kind"));
    }
    if !env.content_encoding.is_empty() {
        return Err(ApiError::unsupported_body(format!(
            "the protobuf body of kind {kind:?} is encoded with {:?}; the emulator decodes only plain protobuf",
            env.content_encoding
        )));
    }
    if !env.content_type.is_empty() && env.content_type != MEDIA_TYPE {
        return Err(ApiError::unsupported_body(format!(
            "the protobuf envelope of kind {kind:?} holds {:?}; the emulator decodes only {MEDIA_TYPE}",
            env.content_type
        )));
    }
    let schema = Resource::of_kind(&api_version, &kind)
        .and_then(schema_of)
        .ok_or_else(|| {
            ApiError::unsupported_body(format!(
                "the emulator cannot decode a protobuf body of kind {kind:?} (apiVersion {api_version:?}): it decodes Lease, LeaseCandidate, ConfigMap, Namespace and Node from {MEDIA_TYPE}; send this one as application/json"
            ))
        })?;
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::from(api_version));
    object.insert("kind".into(), Value::from(kind));
    decode_into(schema, env.raw, &mut object).map_err(|Malformed(why)| bad(why))?;
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // A tiny encoder, for the tests only.

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(number: u64, wire: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint((number << 3) | wire, &mut out);
        out
    }

    /// A varint field (int32 and int64 are sign-extended, as Go writes them).
    fn int(number: u64, v: i64) -> Vec<u8> {
        let mut out = key(number, 0);
        varint(v as u64, &mut out);
        out
    }

    /// A length-delimited field: bytes, a string or a message.
    fn len(number: u64, data: &[u8]) -> Vec<u8> {
        let mut out = key(number, 2);
        varint(data.len() as u64, &mut out);
        out.extend_from_slice(data);
        out
    }

    fn s(number: u64, text: &str) -> Vec<u8> {
        len(number, text.as_bytes())
    }

    fn msg(number: u64, fields: &[Vec<u8>]) -> Vec<u8> {
        len(number, &fields.concat())
    }

    /// A map entry `{key = 1, value = 2}` of field `number`.
    fn entry(number: u64, k: &str, v: &[u8]) -> Vec<u8> {
        msg(number, &[s(1, k), len(2, v)])
    }

    fn fixed32(number: u64) -> Vec<u8> {
        [key(number, 5), vec![1, 2, 3, 4]].concat()
    }

    fn fixed64(number: u64) -> Vec<u8> {
        [key(number, 1), vec![1, 2, 3, 4, 5, 6, 7, 8]].concat()
    }

    fn envelope(api_version: &str, kind: &str, raw: &[Vec<u8>]) -> Vec<u8> {
        let unknown = [
            msg(1, &[s(1, api_version), s(2, kind)]),
            len(2, &raw.concat()),
            s(3, ""),
            s(4, ""),
        ]
        .concat();
        [MAGIC.to_vec(), unknown].concat()
    }

    /// ObjectMeta as Go writes it: every string, even empty, plus the
    /// server's fields that the decoder skips.
    fn meta(name: &str, namespace: &str, extra: &[Vec<u8>]) -> Vec<u8> {
        let mut fields = vec![
            s(1, name),
            s(2, ""),
            s(3, namespace),
            s(4, ""),
            s(5, ""),
            s(6, ""),
            int(7, 0),
            msg(8, &[int(1, 1_700_000_000)]),
        ];
        fields.extend_from_slice(extra);
        msg(1, &fields)
    }

    fn decoded(body: &[u8]) -> Value {
        decode(body).unwrap_or_else(|e| panic!("decodes: {} {}", e.code, e.message))
    }

    fn refused(body: &[u8]) -> ApiError {
        match decode(body) {
            Ok(v) => panic!("decoded {v}"),
            Err(e) => e,
        }
    }

    #[test]
    fn config_map_with_full_metadata() {
        let owner = msg(
            13,
            &[
                s(1, "Node"),
                s(3, "worker-1"),
                s(4, "uid-1"),
                s(5, "v1"),
                int(6, 1),
            ],
        );
        let managed = msg(17, &[s(1, "kubectl"), s(2, "Update")]);
        let body = envelope(
            "v1",
            "ConfigMap",
            &[
                meta(
                    "cm1",
                    "demo",
                    &[
                        entry(11, "app", b"x"),
                        entry(11, "tier", b""),
                        entry(12, "note", b"hello"),
                        owner,
                        s(14, "example.com/keep"),
                        managed,
                    ],
                ),
                entry(2, "a", b"b"),
                entry(2, "c", b"d"),
                entry(3, "blob", &[0, 1, 0xff]),
                int(4, 1),
            ],
        );
        assert_eq!(
            decoded(&body),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "cm1",
                    "namespace": "demo",
                    "labels": {"app": "x", "tier": ""},
                    "annotations": {"note": "hello"},
                    "ownerReferences": [{
                        "apiVersion": "v1",
                        "kind": "Node",
                        "name": "worker-1",
                        "uid": "uid-1",
                        "controller": true
                    }],
                    "finalizers": ["example.com/keep"]
                },
                "data": {"a": "b", "c": "d"},
                "binaryData": {"blob": "AAH/"},
                "immutable": true
            })
        );
    }

    #[test]
    fn metadata_keeps_uid_version_and_generation_when_set() {
        let body = envelope(
            "v1",
            "ConfigMap",
            &[msg(
                1,
                &[s(1, "cm"), s(2, "cm-"), s(5, "u-1"), s(6, "42"), int(7, 3)],
            )],
        );
        assert_eq!(
            decoded(&body)["metadata"],
            json!({"name": "cm", "generateName": "cm-", "uid": "u-1", "resourceVersion": "42", "generation": 3})
        );
    }

    #[test]
    fn namespace_keeps_spec_finalizers_and_skips_status() {
        let body = envelope(
            "v1",
            "Namespace",
            &[
                meta("demo", "", &[]),
                msg(2, &[s(1, "kubernetes"), s(1, "example.com/x")]),
                msg(3, &[s(1, "Active")]),
            ],
        );
        assert_eq!(
            decoded(&body),
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "demo"},
                "spec": {"finalizers": ["kubernetes", "example.com/x"]}
            })
        );
    }

    #[test]
    fn node_spec_with_taints() {
        let taint = |k: &str, v: &str, effect: &str| {
            msg(5, &[s(1, k), s(2, v), s(3, effect), msg(4, &[int(1, 5)])])
        };
        let body = envelope(
            "v1",
            "Node",
            &[
                meta("worker-1", "", &[]),
                msg(
                    2,
                    &[
                        s(1, "10.0.0.0/24"),
                        s(2, "legacy-external-id"),
                        s(3, "kind://worker-1"),
                        int(4, 1),
                        taint("example.com/drain", "", "NoSchedule"),
                        taint("dedicated", "infra", "NoExecute"),
                        s(7, "10.0.0.0/24"),
                        s(7, "fd00::/64"),
                    ],
                ),
                msg(3, &[s(3, "Running")]),
            ],
        );
        assert_eq!(
            decoded(&body),
            json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "worker-1"},
                "spec": {
                    "podCIDR": "10.0.0.0/24",
                    "podCIDRs": ["10.0.0.0/24", "fd00::/64"],
                    "providerID": "kind://worker-1",
                    "unschedulable": true,
                    "taints": [
                        {"key": "example.com/drain", "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "infra", "effect": "NoExecute"}
                    ]
                }
            })
        );
        // A schedulable node: `unschedulable: false` is left out, as in Go's JSON.
        let body = envelope("v1", "Node", &[meta("n", "", &[]), msg(2, &[int(4, 0)])]);
        assert_eq!(decoded(&body)["spec"], json!({}));
    }

    #[test]
    fn lease_candidate_as_client_go_sends_it() {
        let body = envelope(
            "coordination.k8s.io/v1beta1",
            "LeaseCandidate",
            &[
                meta("kube-scheduler-node-a", "kube-system", &[]),
                msg(
                    2,
                    &[
                        s(1, "kube-scheduler"),
                        msg(3, &[int(1, 1_786_923_070)]),
                        s(4, "1.34.0"),
                        s(5, ""),
                        s(6, "OldestEmulationVersion"),
                    ],
                ),
            ],
        );
        assert_eq!(
            decoded(&body),
            json!({
                "apiVersion": "coordination.k8s.io/v1beta1",
                "kind": "LeaseCandidate",
                "metadata": {"name": "kube-scheduler-node-a", "namespace": "kube-system"},
                "spec": {
                    "leaseName": "kube-scheduler",
                    "renewTime": "2026-08-16T23:31:10.000000Z",
                    "binaryVersion": "1.34.0",
                    "strategy": "OldestEmulationVersion"
                }
            })
        );
    }

    #[test]
    fn lease_spec_with_micro_times() {
        let body = envelope(
            "coordination.k8s.io/v1",
            "Lease",
            &[
                meta("lock", "default", &[]),
                msg(
                    2,
                    &[
                        s(1, "node-a"),
                        int(2, 15),
                        msg(3, &[int(1, 1_786_923_069), int(2, 123_456_789)]),
                        msg(4, &[int(1, 1_786_923_070)]),
                        int(5, 0),
                        s(6, "OldestEmulationVersion"),
                        s(7, ""),
                    ],
                ),
            ],
        );
        assert_eq!(
            decoded(&body),
            json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "lock", "namespace": "default"},
                "spec": {
                    "holderIdentity": "node-a",
                    "leaseDurationSeconds": 15,
                    "acquireTime": "2026-08-16T23:31:09.123456Z",
                    "renewTime": "2026-08-16T23:31:10.000000Z",
                    "leaseTransitions": 0,
                    "strategy": "OldestEmulationVersion",
                    "preferredHolder": ""
                }
            })
        );
        // The first and last instants a Timestamp holds.
        let body = envelope(
            "coordination.k8s.io/v1",
            "Lease",
            &[msg(
                2,
                &[
                    msg(3, &[int(1, -62_135_596_800)]),
                    msg(4, &[int(1, 253_402_300_799), int(2, 999_999_999)]),
                ],
            )],
        );
        assert_eq!(
            decoded(&body)["spec"],
            json!({"acquireTime": "0001-01-01T00:00:00.000000Z", "renewTime": "9999-12-31T23:59:59.999999Z"})
        );
        // A negative int32 (ten bytes on the wire) stays negative, for
        // validation to refuse; an empty spec is kept empty.
        let body = envelope("coordination.k8s.io/v1", "Lease", &[msg(2, &[int(5, -1)])]);
        assert_eq!(decoded(&body)["spec"], json!({"leaseTransitions": -1}));
    }

    /// The bytes kubectl 1.32 sent for `kubectl create namespace demo` and
    /// `kubectl create configmap cm1 -n demo --from-literal=a=b
    /// --from-file=bin=<the bytes 00 01 ff>` (its `-v=8` dump).
    #[test]
    fn what_kubectl_sends() {
        let namespace = b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1c\x0a\x14\x0a\x04demo\x12\x00\
            \x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";
        assert_eq!(
            decoded(namespace),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}, "spec": {}})
        );
        let config_map =
            b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x2d\x0a\x17\x0a\x03cm1\x12\x00\
            \x1a\x04demo\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12\x06\x0a\x01a\x12\x01b\
            \x1a\x0a\x0a\x03bin\x12\x03\x00\x01\xff\x1a\x00\x22\x00";
        assert_eq!(
            decoded(config_map),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm1", "namespace": "demo"},
                "data": {"a": "b"},
                "binaryData": {"bin": "AAH/"}
            })
        );
    }

    #[test]
    fn unknown_fields_of_every_wire_type_are_skipped() {
        let junk = [
            int(90, 7),
            fixed32(91),
            fixed64(92),
            s(93, "x"),
            msg(94, &[int(1, 1)]),
        ];
        let mut raw = vec![meta("cm", "demo", &junk)];
        raw.extend_from_slice(&junk);
        raw.push(entry(2, "a", b"b"));
        let mut body = envelope("v1", "ConfigMap", &raw);
        body.extend(junk.concat()); // in the envelope too
        assert_eq!(
            decoded(&body),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cm", "namespace": "demo"},
                "data": {"a": "b"}
            })
        );
    }

    #[test]
    fn malformed_bytes_are_a_400() {
        let good = envelope("v1", "ConfigMap", &[meta("cm", "demo", &[])]);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            (
                "wrong magic",
                [b"k9s\0".to_vec(), good[4..].to_vec()].concat(),
            ),
            ("JSON", br#"{"kind":"ConfigMap"}"#.to_vec()),
            ("magic only: no kind", MAGIC.to_vec()),
            ("truncated varint", [MAGIC, &[0x0a, 0x80]].concat()),
            ("truncated key", [MAGIC, &[0x80]].concat()),
            ("length past the end", [MAGIC, &[0x0a, 0x05, 0x0a]].concat()),
            ("cut short", good[..good.len() - 3].to_vec()),
            (
                "varint over 64 bits",
                [MAGIC, &[0x08], &[0xff; 10], &[0x01]].concat(),
            ),
            ("group wire type", [MAGIC, &key(9, 3)].concat()),
            ("field number 0", [MAGIC, &[0x02, 0x00]].concat()),
            (
                "kind as a varint",
                [MAGIC, msg(1, &[s(1, "v1"), int(2, 5)]).as_slice()].concat(),
            ),
            (
                "name not UTF-8",
                envelope("v1", "ConfigMap", &[msg(1, &[len(1, &[0xff, 0xfe])])]),
            ),
            (
                "nanos out of range",
                envelope(
                    "coordination.k8s.io/v1",
                    "Lease",
                    &[msg(2, &[msg(4, &[int(2, 1_000_000_000)])])],
                ),
            ),
            (
                "seconds past the year 9999",
                envelope(
                    "coordination.k8s.io/v1",
                    "Lease",
                    &[msg(2, &[msg(3, &[int(1, i64::MAX)])])],
                ),
            ),
            (
                "a map entry cut short",
                envelope(
                    "v1",
                    "ConfigMap",
                    &[[key(2, 2), vec![2, 0x0a, 0x05]].concat()],
                ),
            ),
        ];
        for (what, body) in cases {
            let err = refused(&body);
            assert_eq!((err.code, err.reason), (400, "BadRequest"), "{what}");
            assert!(
                err.message
                    .starts_with("error decoding the request body as protobuf: "),
                "{what}: {}",
                err.message
            );
        }
    }

    #[test]
    fn other_kinds_and_encodings_are_a_415_naming_them() {
        for (api_version, kind) in [
            ("v1", "Pod"),
            ("v1", "Event"),
            ("events.k8s.io/v1", "Event"),
            ("apps/v1", "Deployment"),
            ("v1", "Lease"),
            ("meta.k8s.io/v1", "DeleteOptions"),
        ] {
            let err = refused(&envelope(api_version, kind, &[meta("x", "", &[])]));
            assert_eq!(
                (err.code, err.reason),
                (415, "UnsupportedMediaType"),
                "{kind}"
            );
            assert!(
                err.message.contains(&format!("kind {kind:?}"))
                    && err.message.contains(&format!("{api_version:?}")),
                "{}",
                err.message
            );
        }
        let mut gzip = envelope("v1", "ConfigMap", &[]);
        gzip.extend(s(3, "gzip"));
        let err = refused(&gzip);
        assert_eq!(err.code, 415);
        assert!(err.message.contains("\"gzip\""), "{}", err.message);
        let mut json_inside = envelope("v1", "ConfigMap", &[]);
        json_inside.extend(s(4, "application/json"));
        assert_eq!(refused(&json_inside).code, 415);
    }

    /// Every prefix of a valid body, and bytes flipped in it, give an answer
    /// (decoded or refused), never a panic.
    #[test]
    fn cut_or_corrupted_bodies_never_panic() {
        let body = envelope(
            "coordination.k8s.io/v1",
            "Lease",
            &[
                meta("lock", "default", &[entry(11, "a", b"b")]),
                msg(2, &[s(1, "a"), int(2, 15), msg(4, &[int(1, 1), int(2, 5)])]),
            ],
        );
        for end in 0..body.len() {
            let _ = decode(&body[..end]);
        }
        let mut x: u32 = 0x9e37_79b9;
        for _ in 0..20_000 {
            // xorshift: which byte to change, and to what.
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let mut corrupt = body.clone();
            let at = MAGIC.len() + x as usize % (body.len() - MAGIC.len());
            corrupt[at] = (x >> 24) as u8;
            if let Err(e) = decode(&corrupt) {
                assert!(matches!(e.code, 400 | 415), "{}", e.message);
            }
        }
    }
}
