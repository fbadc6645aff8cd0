//! apps/v1 `Deployment` and policy/v1 `PodDisruptionBudget`, as the Go types
//! of `k8s.io/api` 1.34 declare them (the JSON names k8s-openapi's `v1_34`
//! module spells). Their `status` is the controllers' and is opaque. Both
//! kinds are taken as JSON only: the field numbers are 0.

use super::label_selector::LABEL_SELECTOR;
use super::pod::POD_TEMPLATE_SPEC;
use super::{OBJECT_META, Schema, Shape};

/// apps/v1 `RollingUpdateDeployment`.
static ROLLING_UPDATE_DEPLOYMENT: Schema = Schema {
    name: "RollingUpdateDeployment",
    fields: &[
        (0, "maxSurge", Shape::IntOrStr),
        (0, "maxUnavailable", Shape::IntOrStr),
    ],
};

/// apps/v1 `DeploymentStrategy`.
static DEPLOYMENT_STRATEGY: Schema = Schema {
    name: "DeploymentStrategy",
    fields: &[
        (
            0,
            "rollingUpdate",
            Shape::Message(&ROLLING_UPDATE_DEPLOYMENT),
        ),
        (0, "type", Shape::Str),
    ],
};

/// apps/v1 `DeploymentSpec`.
static DEPLOYMENT_SPEC: Schema = Schema {
    name: "DeploymentSpec",
    fields: &[
        (0, "minReadySeconds", Shape::Int32),
        (0, "paused", Shape::Bool),
        (0, "progressDeadlineSeconds", Shape::Int32),
        (0, "replicas", Shape::Int32),
        (0, "revisionHistoryLimit", Shape::Int32),
        (0, "selector", Shape::Message(&LABEL_SELECTOR)),
        (0, "strategy", Shape::Message(&DEPLOYMENT_STRATEGY)),
        (0, "template", Shape::Message(&POD_TEMPLATE_SPEC)),
    ],
};

/// apps/v1 `Deployment`.
pub(crate) static DEPLOYMENT: Schema = Schema {
    name: "Deployment",
    fields: &[
        (0, "metadata", Shape::Message(&OBJECT_META)),
        (0, "spec", Shape::Message(&DEPLOYMENT_SPEC)),
        (0, "status", Shape::Opaque),
    ],
};

/// policy/v1 `PodDisruptionBudgetSpec`.
static POD_DISRUPTION_BUDGET_SPEC: Schema = Schema {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        (0, "maxUnavailable", Shape::IntOrStr),
        (0, "minAvailable", Shape::IntOrStr),
        (0, "selector", Shape::Message(&LABEL_SELECTOR)),
        (0, "unhealthyPodEvictionPolicy", Shape::Str),
    ],
};

/// policy/v1 `PodDisruptionBudget`.
pub(crate) static POD_DISRUPTION_BUDGET: Schema = Schema {
    name: "PodDisruptionBudget",
    fields: &[
        (0, "metadata", Shape::Message(&OBJECT_META)),
        (0, "spec", Shape::Message(&POD_DISRUPTION_BUDGET_SPEC)),
        (0, "status", Shape::Opaque),
    ],
};

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;

    use super::*;
    use crate::schema::round_trip::assert_round_trips;

    /// Every field named here is a field of the Go type: a JSON document with
    /// all of them set survives k8s-openapi's decoder unchanged.
    #[test]
    fn every_field_is_one_of_the_type() {
        assert_round_trips::<Deployment>(&DEPLOYMENT);
        assert_round_trips::<PodDisruptionBudget>(&POD_DISRUPTION_BUDGET);
    }
}
