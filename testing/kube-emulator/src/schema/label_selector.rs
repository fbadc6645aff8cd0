//! meta/v1 `LabelSelector`, for the selectors of a ValidatingAdmissionPolicy
//! (`namespaceSelector`, `objectSelector`) and, with the feature `workloads`,
//! of the kinds that hold a pod template. Taken as JSON only: the field
//! numbers are 0.

use super::{STRING_ENTRY, Schema, Shape};

/// meta/v1 `LabelSelector`.
pub(crate) static LABEL_SELECTOR: Schema = Schema {
    name: "LabelSelector",
    fields: &[
        (
            0,
            "matchExpressions",
            Shape::Messages(&LABEL_SELECTOR_REQUIREMENT),
        ),
        (0, "matchLabels", Shape::Map(&STRING_ENTRY)),
    ],
};

/// meta/v1 `LabelSelectorRequirement`.
static LABEL_SELECTOR_REQUIREMENT: Schema = Schema {
    name: "LabelSelectorRequirement",
    fields: &[
        (0, "key", Shape::StrKept),
        (0, "operator", Shape::StrKept),
        (0, "values", Shape::Strings),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::round_trip::assert_round_trips;

    #[test]
    fn label_selector_round_trips() {
        assert_round_trips::<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>(
            &LABEL_SELECTOR,
        );
    }
}
