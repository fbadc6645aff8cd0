//! Stamping an object sent as Kubernetes protobuf
//! (`application/vnd.kubernetes.protobuf`), as kubectl and client-go send
//! built-in types: `kubectl create configmap` does. The stamp layer adds its
//! annotations without a schema, by two rules of the encoding:
//!
//! - the body is the magic `k8s\0`, then a `runtime.Unknown` message whose
//!   field 2 (`raw`) is the object's own encoding; its other fields (type,
//!   content encoding and type) are kept as they are;
//! - every built-in object has its `ObjectMeta` as field 1, and `annotations`
//!   is field 12 of `ObjectMeta`, a map (entries of key 1, value 2). A message
//!   field that occurs twice is merged, a map entry that occurs twice keeps the
//!   last value: so a second field 1 holding only the stamp's annotation
//!   entries, appended to `raw`, adds them (or replaces their values) and
//!   leaves the rest of the object alone.
//!
//! Anything that does not parse as that envelope is left unstamped (and the
//! fence refuses it).

/// The envelope's magic.
const MAGIC: &[u8] = b"k8s\0";
/// `runtime.Unknown.raw`.
const RAW: u64 = 2;
/// An object's `metadata`.
const METADATA: u64 = 1;
/// `ObjectMeta.annotations`.
const ANNOTATIONS: u64 = 12;
/// Wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

/// `body` (a protobuf envelope) with the annotations `pairs` added to its
/// object; `None` when it is not one.
pub(crate) fn with_annotations<'a>(
    body: &[u8],
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> Option<Vec<u8>> {
    let unknown = body.strip_prefix(MAGIC)?;
    let mut out = Vec::with_capacity(body.len() + 256);
    out.extend_from_slice(MAGIC);
    let mut rest = unknown;
    let mut stamped = false;
    let mut meta = Vec::new();
    for (key, value) in pairs {
        let mut entry = Vec::new();
        put_len(&mut entry, 1, key.as_bytes());
        put_len(&mut entry, 2, value.as_bytes());
        put_len(&mut meta, ANNOTATIONS, &entry);
    }
    while !rest.is_empty() {
        let (tag, after_tag) = varint(rest)?;
        let after = match tag & 7 {
            VARINT => varint(after_tag)?.1,
            FIXED64 => after_tag.get(8..)?,
            FIXED32 => after_tag.get(4..)?,
            LEN => {
                let (len, r) = varint(after_tag)?;
                let len = usize::try_from(len).ok()?;
                let bytes = r.get(..len)?;
                if tag >> 3 == RAW && !stamped {
                    let mut raw = bytes.to_vec();
                    put_len(&mut raw, METADATA, &meta);
                    put_len(&mut out, RAW, &raw);
                    stamped = true;
                    rest = &r[len..];
                    continue;
                }
                &r[len..]
            }
            _ => return None,
        };
        out.extend_from_slice(&rest[..rest.len() - after.len()]);
        rest = after;
    }
    stamped.then_some(out)
}

/// A varint and what follows it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Field `field`, length-delimited, holding `bytes`.
fn put_len(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_varint(out, (field << 3) | LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The length-delimited fields of `bytes`, in order (none other expected).
    fn fields(mut bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let (tag, r) = varint(bytes).expect("a tag");
            assert_eq!(tag & 7, LEN);
            let (len, r) = varint(r).expect("a length");
            let len = len as usize;
            out.push((tag >> 3, r[..len].to_vec()));
            bytes = &r[len..];
        }
        out
    }

    /// The annotations of an object's encoding, merged as a decoder merges.
    fn annotations(object: &[u8]) -> BTreeMap<String, String> {
        let mut map = BTreeMap::new();
        for (field, meta) in fields(object) {
            if field != METADATA {
                continue;
            }
            for (field, entry) in fields(&meta) {
                if field != ANNOTATIONS {
                    continue;
                }
                let kv = fields(&entry);
                let text = |b: &[u8]| String::from_utf8(b.to_vec()).expect("UTF-8");
                map.insert(text(&kv[0].1), text(&kv[1].1));
            }
        }
        map
    }

    fn envelope(object: &[u8]) -> Vec<u8> {
        let mut type_meta = Vec::new();
        put_len(&mut type_meta, 1, b"v1");
        put_len(&mut type_meta, 2, b"ConfigMap");
        let mut out = MAGIC.to_vec();
        put_len(&mut out, 1, &type_meta);
        put_len(&mut out, RAW, object);
        put_len(&mut out, 4, b"");
        out
    }

    #[test]
    fn the_stamp_is_merged_into_the_objects_annotations_and_the_rest_is_kept() {
        // A ConfigMap: metadata {name: "x", annotations {keep: "1", term: "old"}},
        // data {a: "1"}.
        let mut meta = Vec::new();
        put_len(&mut meta, 1, b"x");
        for (k, v) in [("keep", "1"), ("term", "old")] {
            let mut entry = Vec::new();
            put_len(&mut entry, 1, k.as_bytes());
            put_len(&mut entry, 2, v.as_bytes());
            put_len(&mut meta, ANNOTATIONS, &entry);
        }
        let mut object = Vec::new();
        put_len(&mut object, METADATA, &meta);
        let mut data = Vec::new();
        put_len(&mut data, 1, b"a");
        put_len(&mut data, 2, b"1");
        put_len(&mut object, 2, &data);
        let body = envelope(&object);

        let stamped = with_annotations(&body, [("term", "3@7"), ("holder", "pod-a")].into_iter())
            .expect("an envelope");
        let unknown = fields(stamped.strip_prefix(MAGIC).expect("the magic"));
        let original = fields(body.strip_prefix(MAGIC).expect("the magic"));
        assert_eq!(unknown.len(), original.len());
        assert_eq!(
            (unknown[0].clone(), unknown[2].clone()),
            (original[0].clone(), original[2].clone())
        );
        let raw = &unknown[1].1;
        assert!(
            raw.starts_with(&object),
            "the object's own fields come first, unchanged"
        );
        let expected: BTreeMap<String, String> =
            [("keep", "1"), ("term", "3@7"), ("holder", "pod-a")]
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect();
        assert_eq!(annotations(raw), expected);
    }

    #[test]
    fn what_is_not_an_envelope_is_left_alone() {
        let pairs = || [("term", "1@1")].into_iter();
        assert_eq!(with_annotations(b"{\"kind\":\"ConfigMap\"}", pairs()), None);
        assert_eq!(
            with_annotations(b"k8s\0\x12\x05ab", pairs()),
            None,
            "a short field"
        );
        assert_eq!(with_annotations(b"k8s\0", pairs()), None, "no object");
        assert_eq!(
            with_annotations(b"k8s\0\x0b", pairs()),
            None,
            "a group wire type"
        );
    }
}
