//! The annotations both Kubernetes locks keep next to the record for priority
//! preemption (docs/design.md §4), and their reading and writing, written once.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The annotations: the holder's priority (a decimal `i64`), the candidate that
/// asked the holder to hand the lock over, and that candidate's priority. The
/// JSON record of `lock-json` names its priority fields the same.
pub use lock_json::{HANDOVER_PRIORITY, HANDOVER_TO, PRIORITY};

/// The annotation `key` of `meta`, if set.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The annotation `key` of `meta` read as a decimal `i64`; a malformed value is
/// reported (a `tracing` warning) and read as absent.
pub fn int_annotation(meta: &ObjectMeta, key: &str) -> Option<i64> {
    let raw = annotation(meta, key)?;
    match raw.trim().parse::<i64>() {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::warn!(
                annotation = key,
                value = raw,
                "ignoring a malformed priority annotation"
            );
            None
        }
    }
}

/// Sets each annotation of `values` that has a value and removes each that has
/// none; every other annotation is kept.
pub fn set_annotations<'k>(
    meta: &mut ObjectMeta,
    values: impl IntoIterator<Item = (&'k str, Option<String>)>,
) {
    for (key, value) in values {
        match value {
            Some(v) => {
                meta.annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key.to_owned(), v);
            }
            None => {
                if let Some(a) = meta.annotations.as_mut() {
                    a.remove(key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h7_annotations_are_set_removed_and_others_kept() {
        let mut meta = ObjectMeta {
            annotations: Some(BTreeMap::from([
                ("note".to_owned(), "keep".to_owned()),
                (HANDOVER_TO.to_owned(), "b".to_owned()),
            ])),
            ..ObjectMeta::default()
        };
        set_annotations(
            &mut meta,
            [(PRIORITY, Some("5".to_owned())), (HANDOVER_TO, None)],
        );
        assert_eq!(int_annotation(&meta, PRIORITY), Some(5));
        assert_eq!(annotation(&meta, HANDOVER_TO), None);
        assert_eq!(annotation(&meta, "note"), Some("keep"));
        set_annotations(&mut meta, [(PRIORITY, Some(" x ".to_owned()))]);
        assert_eq!(
            int_annotation(&meta, PRIORITY),
            None,
            "malformed reads as absent"
        );
    }
}
