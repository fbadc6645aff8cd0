//! The kinds a controller's tests are likely to ask for that the emulator
//! does not serve: those a deployment of a controller is made of. A request
//! for one, or for its API group, is refused with a `Status` that says the
//! emulator serves the kinds of leader election only and to test such code
//! on kube-apiserver, rather than with the server's bare 404 for a path it
//! does not know.

use crate::status::ApiError;

/// A kind the emulator does not serve, by where the API server serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unserved {
    /// API group, `""` for the core group.
    pub(crate) group: &'static str,
    /// API version within the group.
    pub(crate) version: &'static str,
    /// Plural resource name used in URLs.
    pub(crate) plural: &'static str,
}

/// The kinds a deployment of a controller is made of besides the election's
/// own.
const UNSERVED: [Unserved; 6] = [
    Unserved {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
    },
    Unserved {
        group: "",
        version: "v1",
        plural: "pods",
    },
    Unserved {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
    },
    Unserved {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
    },
    Unserved {
        group: "apps",
        version: "v1",
        plural: "deployments",
    },
    Unserved {
        group: "policy",
        version: "v1",
        plural: "poddisruptionbudgets",
    },
];

/// The kind not served at `group/version` under `plural`.
pub(crate) fn kind(group: &str, version: &str, plural: &str) -> Option<Unserved> {
    UNSERVED
        .iter()
        .copied()
        .find(|u| u.group == group && u.version == version && u.plural == plural)
}

/// A kind of the API group `group` (and of its version `version`, when
/// given) that is not served, the emulator serving nothing else there: the
/// group's discovery is then refused the same way.
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
        ApiError::not_served(&self.qualified(), self.group, self.plural)
    }

    /// The 404 for the discovery of its API group (`/apis/apps`,
    /// `/apis/apps/v1`).
    pub(crate) fn group_refusal(self) -> ApiError {
        ApiError::not_served(&format!("the API group {:?}", self.group), self.group, "")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind not served is found by its coordinates, and the message names
    /// the resource and where to test it; its group's discovery too.
    #[test]
    fn a_kind_not_served_is_refused_naming_where_to_test_it() {
        let e = kind("apps", "v1", "deployments")
            .expect("not served")
            .refusal();
        assert_eq!((e.code, e.reason), (404, "NotFound"));
        assert_eq!(
            e.message,
            "the server could not find the requested resource: deployments.apps is not served by kube-emulator, which serves the kinds of leader election only; test this on kube-apiserver"
        );
        assert_eq!(
            group("rbac.authorization.k8s.io", Some("v1"))
                .expect("not served")
                .group_refusal()
                .message,
            "the server could not find the requested resource: the API group \"rbac.authorization.k8s.io\" is not served by kube-emulator, which serves the kinds of leader election only; test this on kube-apiserver"
        );
        let e = kind("", "v1", "serviceaccounts")
            .expect("not served")
            .refusal();
        assert!(
            e.message.contains("serviceaccounts is not served"),
            "{}",
            e.message
        );
        // The core group is never refused as a whole, nor a kind of another version.
        assert_eq!(group("", None), None);
        assert_eq!(kind("apps", "v1beta1", "deployments"), None);
    }
}
