//! The kinds the emulator can serve but this build does not: they are
//! compiled in with a cargo feature only (see the crate's `[features]`). A
//! request for one, or for its API group, is refused with a `Status` that
//! says which feature serves it, rather than with the server's bare 404 for
//! a path it does not know.

use crate::status::ApiError;

/// A kind left out of this build: where it is served, and the feature that
/// serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unserved {
    /// API group, `""` for the core group.
    pub(crate) group: &'static str,
    /// API version within the group.
    pub(crate) version: &'static str,
    /// Plural resource name used in URLs.
    pub(crate) plural: &'static str,
    /// The cargo feature of `kube-emulator` that serves it.
    pub(crate) feature: &'static str,
}

/// The kinds of the feature `workloads`: those a deployment of a controller
/// is made of besides the election's own.
const WORKLOADS: [Unserved; 5] = [
    Unserved {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        feature: "workloads",
    },
    Unserved {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
        feature: "workloads",
    },
    Unserved {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
        feature: "workloads",
    },
    Unserved {
        group: "apps",
        version: "v1",
        plural: "deployments",
        feature: "workloads",
    },
    Unserved {
        group: "policy",
        version: "v1",
        plural: "poddisruptionbudgets",
        feature: "workloads",
    },
];

/// The kinds this build leaves out.
const UNSERVED: &[Unserved] = if cfg!(feature = "workloads") {
    &[]
} else {
    &WORKLOADS
};

/// The kind left out of this build that is served at `group/version` under
/// `plural`.
pub(crate) fn kind(group: &str, version: &str, plural: &str) -> Option<Unserved> {
    UNSERVED
        .iter()
        .copied()
        .find(|u| u.group == group && u.version == version && u.plural == plural)
}

/// A kind of the API group `group` (and of its version `version`, when
/// given) left out of this build, when the build serves nothing else there:
/// the group's discovery is then refused naming the feature.
pub(crate) fn group(group: &str, version: Option<&str>) -> Option<Unserved> {
    UNSERVED
        .iter()
        .copied()
        .find(|u| u.group == group && !u.group.is_empty() && version.is_none_or(|v| u.version == v))
}

impl Unserved {
    /// `deployments.apps`, `serviceaccounts`: the resource as the API server
    /// names it in messages.
    pub(crate) fn qualified(self) -> String {
        if self.group.is_empty() {
            self.plural.to_owned()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The 404 for a request of this kind.
    pub(crate) fn refusal(self) -> ApiError {
        ApiError::not_compiled_in(&self.qualified(), self.group, self.plural, self.feature)
    }

    /// The 404 for the discovery of its API group (`/apis/apps`,
    /// `/apis/apps/v1`, `/openapi/v3/apis/apps/v1`).
    pub(crate) fn group_refusal(self) -> ApiError {
        ApiError::not_compiled_in(
            &format!("the API group {:?}", self.group),
            self.group,
            "",
            self.feature,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of the feature is refused by its coordinates when the build
    /// lacks it, and none is when the build has it; the message names the
    /// resource and the feature.
    #[test]
    fn a_kind_left_out_is_found_with_its_feature_only_when_left_out() {
        let found = kind("apps", "v1", "deployments");
        if cfg!(feature = "workloads") {
            assert_eq!(found, None);
            assert_eq!(group("apps", None), None);
        } else {
            let u = found.expect("left out");
            assert_eq!(u.feature, "workloads");
            let e = u.refusal();
            assert_eq!((e.code, e.reason), (404, "NotFound"));
            assert_eq!(
                e.message,
                "the server could not find the requested resource: deployments.apps is served by kube-emulator only with its cargo feature \"workloads\""
            );
            assert_eq!(
                group("rbac.authorization.k8s.io", Some("v1"))
                    .expect("left out")
                    .group_refusal()
                    .message,
                "the server could not find the requested resource: the API group \"rbac.authorization.k8s.io\" is served by kube-emulator only with its cargo feature \"workloads\""
            );
            assert_eq!(
                kind("", "v1", "serviceaccounts")
                    .expect("left out")
                    .refusal()
                    .message,
                "the server could not find the requested resource: serviceaccounts is served by kube-emulator only with its cargo feature \"workloads\""
            );
        }
        // The core group is never refused as a whole, nor a kind of another version.
        assert_eq!(group("", None), None);
        assert_eq!(kind("apps", "v1beta1", "deployments"), None);
    }
}
