//! coordination.k8s.io/v1beta1 `LeaseCandidate`, as the Go type of
//! `k8s.io/api` declares it.
//! `leaseName` and `binaryVersion` have no `omitempty` (kept even when empty);
//! `emulationVersion` and `strategy` have.

use super::{OBJECT_META, Schema, Shape};

/// coordination/v1beta1 `LeaseCandidateSpec`.
static LEASE_CANDIDATE_SPEC: Schema = Schema {
    name: "LeaseCandidateSpec",
    fields: &[
        ("leaseName", Shape::Str),
        ("pingTime", Shape::MicroTime),
        ("renewTime", Shape::MicroTime),
        ("binaryVersion", Shape::Str),
        ("emulationVersion", Shape::Str),
        ("strategy", Shape::Str),
    ],
};

/// coordination/v1beta1 `LeaseCandidate`.
pub(crate) static LEASE_CANDIDATE: Schema = Schema {
    name: "LeaseCandidate",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("spec", Shape::Message(&LEASE_CANDIDATE_SPEC)),
    ],
};

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;

    use super::*;
    use crate::schema::round_trip::assert_round_trips;

    /// Every field named here is a field of the Go type (k8s-openapi's
    /// `LeaseCandidateSpec`: leaseName, pingTime, renewTime, binaryVersion,
    /// emulationVersion, strategy), and every required field of it is named.
    #[test]
    fn every_field_is_one_of_the_type() {
        assert_round_trips::<LeaseCandidate>(&LEASE_CANDIDATE);
    }
}
