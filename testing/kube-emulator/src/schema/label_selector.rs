//! meta/v1 `LabelSelector`, for the selectors of a ValidatingAdmissionPolicy
//! (`namespaceSelector`, `objectSelector`).

use super::{STRING_ENTRY, Schema, Shape};

/// meta/v1 `LabelSelector`.
pub(crate) static LABEL_SELECTOR: Schema = Schema {
    name: "LabelSelector",
    fields: &[
        (
            "matchExpressions",
            Shape::Messages(&LABEL_SELECTOR_REQUIREMENT),
        ),
        ("matchLabels", Shape::Map(&STRING_ENTRY)),
    ],
};

/// meta/v1 `LabelSelectorRequirement`.
static LABEL_SELECTOR_REQUIREMENT: Schema = Schema {
    name: "LabelSelectorRequirement",
    fields: &[
        ("key", Shape::Str),
        ("operator", Shape::Str),
        ("values", Shape::Strings),
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
