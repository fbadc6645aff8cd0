//! The API server's validation of a `coordination.k8s.io/v1beta1`
//! LeaseCandidate (`ValidateLeaseCandidateSpec` and
//! `ValidateLeaseCandidateSpecUpdate` of `pkg/apis/coordination/validation`),
//! worded as the server words it:
//!
//! - `spec.leaseName` is required, and immutable once written;
//! - `spec.binaryVersion` is required and a strict semantic version without a
//!   leading `v` (`1.33.0`);
//! - `spec.emulationVersion`, when set, is one too, and not above
//!   `binaryVersion`; it is required under the `OldestEmulationVersion`
//!   strategy;
//! - `spec.strategy` is required: `OldestEmulationVersion`, or a qualified name
//!   with a prefix (`example.com/MyStrategy`), checked as a Lease's is.
//!
//! The name of the candidate is checked in [`super::validate_name`]. The Go
//! type's comment says `leaseName` has the limits of a Lease's name, but the
//! server's validation checks only that it is there, and so does the emulator:
//! a candidate for a Lease that cannot exist is stored, and never elected.

use serde_json::Value;

use super::{check_types, normalise_micro_times, str_at, validate_strategy};
use crate::resource::Resource;
use crate::semver::Version;
use crate::status::{ApiError, FieldError};

/// The one strategy the coordinator runs.
pub(crate) const OLDEST_EMULATION_VERSION: &str = "OldestEmulationVersion";

/// Checks the JSON types of a LeaseCandidate, rewrites its `pingTime` and
/// `renewTime` in the server's `MicroTime` form, and returns the field errors
/// of its spec. A wrong JSON type or a malformed time is a 400, as the decoder
/// reports it.
pub(crate) fn check(obj: &mut Value) -> Result<Vec<FieldError>, ApiError> {
    let r = Resource::LeaseCandidate;
    check_types(r, obj)?;
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        normalise_micro_times(r, "LeaseCandidateSpec", spec, &["pingTime", "renewTime"])?;
    }
    Ok(spec_errors(obj))
}

/// `ValidateLeaseCandidateSpec`.
fn spec_errors(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if str_at(obj, "/spec/leaseName").is_empty() {
        errs.push(FieldError::required("spec.leaseName", ""));
    }
    // A version that does not parse counts as 0.0.0 in the checks after it.
    let version = |field: &str, errs: &mut Vec<FieldError>| -> Option<Version> {
        let text = str_at(obj, &format!("/spec/{field}"));
        if text.is_empty() {
            return None;
        }
        let parsed = Version::parse(text);
        if parsed.is_none() {
            errs.push(FieldError::invalid(
                &format!("spec.{field}"),
                &format!("{text:?}"),
                "must be a valid semantic version",
            ));
        }
        Some(parsed.unwrap_or_else(|| Version::tolerant_or_zero("")))
    };
    let emulation = version("emulationVersion", &mut errs);
    let binary = version("binaryVersion", &mut errs);
    if binary.is_none() {
        errs.push(FieldError::required("spec.binaryVersion", ""));
    }
    if let (Some(binary), Some(emulation)) = (&binary, &emulation)
        && binary < emulation
    {
        errs.push(FieldError::invalid(
            "spec.binaryVersion",
            &format!("{:?}", str_at(obj, "/spec/binaryVersion")),
            "must be greater than or equal to `emulationVersion`",
        ));
    }
    let strategy = str_at(obj, "/spec/strategy");
    if strategy.is_empty() {
        errs.push(FieldError::required("spec.strategy", ""));
    } else {
        if strategy == OLDEST_EMULATION_VERSION && emulation.is_none_or(|v| v.is_zero()) {
            errs.push(FieldError::required(
                "spec.emulationVersion",
                "must be specified when `strategy` is 'OldestEmulationVersion'",
            ));
        }
        errs.extend(validate_strategy(strategy));
    }
    errs
}

/// `ValidateLeaseCandidateSpecUpdate`: what an update may not change.
pub(crate) fn update_errors(obj: &Value, old: &Value) -> Vec<FieldError> {
    let (now, before) = (
        str_at(obj, "/spec/leaseName"),
        str_at(old, "/spec/leaseName"),
    );
    if now == before {
        return Vec::new();
    }
    vec![FieldError::invalid(
        "spec.leaseName",
        &format!("{now:?}"),
        "field is immutable",
    )]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(spec: Value) -> Vec<String> {
        let mut obj = json!({"metadata": {"name": "c"}, "spec": spec});
        check(&mut obj)
            .expect("well typed")
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    #[test]
    fn a_complete_candidate_passes_and_its_times_are_normalised() {
        let mut obj = json!({"spec": {"leaseName": "kube-scheduler", "binaryVersion": "1.34.0",
            "emulationVersion": "1.33.0", "strategy": "OldestEmulationVersion",
            "renewTime": "2026-01-01T00:00:00Z", "pingTime": null}});
        assert!(check(&mut obj).expect("types").is_empty());
        assert_eq!(obj["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z");
        assert!(
            errors(
                json!({"leaseName": "l", "binaryVersion": "1.34.0", "strategy": "example.com/Mine"})
            )
            .is_empty(),
            "emulationVersion is needed by OldestEmulationVersion only"
        );
    }

    #[test]
    fn required_fields_are_named() {
        assert_eq!(
            errors(json!({})),
            [
                "spec.leaseName: Required value",
                "spec.binaryVersion: Required value",
                "spec.strategy: Required value"
            ]
        );
        assert_eq!(
            errors(
                json!({"leaseName": "l", "binaryVersion": "1.34.0", "strategy": "OldestEmulationVersion"})
            ),
            [
                "spec.emulationVersion: Required value: must be specified when `strategy` is 'OldestEmulationVersion'"
            ]
        );
    }

    #[test]
    fn versions_are_strict_semver_in_order() {
        assert_eq!(
            errors(json!({"leaseName": "l", "binaryVersion": "v1.34.0",
                "emulationVersion": "1.33", "strategy": "OldestEmulationVersion"})),
            [
                "spec.emulationVersion: Invalid value: \"1.33\": must be a valid semantic version",
                "spec.binaryVersion: Invalid value: \"v1.34.0\": must be a valid semantic version",
                "spec.emulationVersion: Required value: must be specified when `strategy` is 'OldestEmulationVersion'"
            ]
        );
        assert_eq!(
            errors(json!({"leaseName": "l", "binaryVersion": "1.32.0",
                "emulationVersion": "1.33.0", "strategy": "OldestEmulationVersion"})),
            [
                "spec.binaryVersion: Invalid value: \"1.32.0\": must be greater than or equal to `emulationVersion`"
            ]
        );
    }

    #[test]
    fn strategy_is_known_or_qualified() {
        let unknown =
            errors(json!({"leaseName": "l", "binaryVersion": "1.34.0", "strategy": "Newest"}));
        assert_eq!(unknown.len(), 1);
        assert!(
            unknown[0].starts_with(
                "spec.strategy.strategy: Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\""
            ),
            "{unknown:?}"
        );
    }

    #[test]
    fn lease_name_is_immutable() {
        let old = json!({"spec": {"leaseName": "a"}});
        assert!(update_errors(&old, &old).is_empty());
        let errs = update_errors(&json!({"spec": {"leaseName": "b"}}), &old);
        assert_eq!(
            format!("{}: {}", errs[0].field, errs[0].detail),
            "spec.leaseName: Invalid value: \"b\": field is immutable"
        );
    }

    #[test]
    fn a_wrong_json_type_is_the_decoders_400() {
        let mut obj = json!({"spec": {"leaseName": 7}});
        let err = check(&mut obj).expect_err("a number is no string");
        assert_eq!(err.code, 400);
        assert!(
            err.message.starts_with(
                "LeaseCandidate in version \"v1beta1\" cannot be handled as a LeaseCandidate: json: cannot unmarshal number into Go struct field LeaseCandidateSpec.spec.leaseName of type string"
            ),
            "{}",
            err.message
        );
        let mut bad_time = json!({"spec": {"renewTime": "yesterday"}});
        assert_eq!(check(&mut bad_time).expect_err("not a time").code, 400);
    }
}
