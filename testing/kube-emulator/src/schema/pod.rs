//! The pod template of the workload kinds: core/v1 `PodTemplateSpec` and
//! every message below it, as the Go types of `k8s.io/api` core/v1 at
//! Kubernetes 1.34 declare them, with the field names as k8s-openapi's
//! `v1_34` module spells them (its `Deserialize` impls). Served with the
//! feature `workloads` only.
//!
//! These kinds are taken as JSON only, so every protobuf number is 0. The
//! fields of each table are in k8s-openapi's (alphabetical) order.
//!
//! Every field is named; these are [`Shape::Opaque`], known by name only:
//!
//! - a pod's `affinity` (node, pod and anti-affinity: too deep to list);
//! - every volume source of a `Volume` but `configMap`, `secret`, `emptyDir`,
//!   `projected`, `downwardAPI`, `persistentVolumeClaim`, `hostPath` and
//!   `csi` (`nfs`, `iscsi`, `rbd`, `cephfs`, `azureDisk`, `ephemeral`,
//!   `image`, …);
//! - the lists of integers, which no shape describes: a pod security
//!   context's `supplementalGroups` and a container restart rule's
//!   `exitCodes.values`.

use super::label_selector::LABEL_SELECTOR;
use super::{Schema, Shape};

/// core/v1 `PodTemplateSpec`: the pod of a workload.
pub(crate) static POD_TEMPLATE_SPEC: Schema = Schema {
    name: "PodTemplateSpec",
    fields: &[
        (0, "metadata", Shape::Message(&super::OBJECT_META)),
        (0, "spec", Shape::Message(&POD_SPEC)),
    ],
};

/// An entry of a `map<string, resource.Quantity>`.
static QUANTITY_ENTRY: Schema = Schema {
    name: "MapEntry",
    fields: &[(0, "key", Shape::StrKept), (0, "value", Shape::Quantity)],
};

/// core/v1 `PodSpec` (`affinity` opaque).
static POD_SPEC: Schema = Schema {
    name: "PodSpec",
    fields: &[
        (0, "activeDeadlineSeconds", Shape::Int64),
        (0, "affinity", Shape::Opaque),
        (0, "automountServiceAccountToken", Shape::Bool),
        (0, "containers", Shape::Messages(&CONTAINER)),
        (0, "dnsConfig", Shape::Message(&POD_DNS_CONFIG)),
        (0, "dnsPolicy", Shape::Str),
        (0, "enableServiceLinks", Shape::Bool),
        (
            0,
            "ephemeralContainers",
            Shape::Messages(&EPHEMERAL_CONTAINER),
        ),
        (0, "hostAliases", Shape::Messages(&HOST_ALIAS)),
        (0, "hostIPC", Shape::Bool),
        (0, "hostNetwork", Shape::Bool),
        (0, "hostPID", Shape::Bool),
        (0, "hostUsers", Shape::Bool),
        (0, "hostname", Shape::Str),
        (0, "hostnameOverride", Shape::Str),
        (
            0,
            "imagePullSecrets",
            Shape::Messages(&LOCAL_OBJECT_REFERENCE),
        ),
        (0, "initContainers", Shape::Messages(&CONTAINER)),
        (0, "nodeName", Shape::Str),
        (0, "nodeSelector", Shape::Map(&super::STRING_ENTRY)),
        (0, "os", Shape::Message(&POD_OS)),
        (0, "overhead", Shape::Map(&QUANTITY_ENTRY)),
        (0, "preemptionPolicy", Shape::Str),
        (0, "priority", Shape::Int32),
        (0, "priorityClassName", Shape::Str),
        (0, "readinessGates", Shape::Messages(&POD_READINESS_GATE)),
        (0, "resourceClaims", Shape::Messages(&POD_RESOURCE_CLAIM)),
        (0, "resources", Shape::Message(&RESOURCE_REQUIREMENTS)),
        (0, "restartPolicy", Shape::Str),
        (0, "runtimeClassName", Shape::Str),
        (0, "schedulerName", Shape::Str),
        (0, "schedulingGates", Shape::Messages(&POD_SCHEDULING_GATE)),
        (0, "securityContext", Shape::Message(&POD_SECURITY_CONTEXT)),
        (0, "serviceAccount", Shape::Str),
        (0, "serviceAccountName", Shape::Str),
        (0, "setHostnameAsFQDN", Shape::Bool),
        (0, "shareProcessNamespace", Shape::Bool),
        (0, "subdomain", Shape::Str),
        (0, "terminationGracePeriodSeconds", Shape::Int64),
        (0, "tolerations", Shape::Messages(&TOLERATION)),
        (
            0,
            "topologySpreadConstraints",
            Shape::Messages(&TOPOLOGY_SPREAD_CONSTRAINT),
        ),
        (0, "volumes", Shape::Messages(&VOLUME)),
    ],
};

/// The fields of core/v1 `Container`, with those given after them: the one list
/// `Container` and `EphemeralContainer` share.
macro_rules! container_fields {
    ($($extra:expr),* $(,)?) => {
        &[
            (0, "args", Shape::Strings),
            (0, "command", Shape::Strings),
            (0, "env", Shape::Messages(&ENV_VAR)),
            (0, "envFrom", Shape::Messages(&ENV_FROM_SOURCE)),
            (0, "image", Shape::Str),
            (0, "imagePullPolicy", Shape::Str),
            (0, "lifecycle", Shape::Message(&LIFECYCLE)),
            (0, "livenessProbe", Shape::Message(&PROBE)),
            (0, "name", Shape::StrKept),
            (0, "ports", Shape::Messages(&CONTAINER_PORT)),
            (0, "readinessProbe", Shape::Message(&PROBE)),
            (0, "resizePolicy", Shape::Messages(&CONTAINER_RESIZE_POLICY)),
            (0, "resources", Shape::Message(&RESOURCE_REQUIREMENTS)),
            (0, "restartPolicy", Shape::Str),
            (
                0,
                "restartPolicyRules",
                Shape::Messages(&CONTAINER_RESTART_RULE),
            ),
            (0, "securityContext", Shape::Message(&SECURITY_CONTEXT)),
            (0, "startupProbe", Shape::Message(&PROBE)),
            (0, "stdin", Shape::Bool),
            (0, "stdinOnce", Shape::Bool),
            (0, "terminationMessagePath", Shape::Str),
            (0, "terminationMessagePolicy", Shape::Str),
            (0, "tty", Shape::Bool),
            (0, "volumeDevices", Shape::Messages(&VOLUME_DEVICE)),
            (0, "volumeMounts", Shape::Messages(&VOLUME_MOUNT)),
            (0, "workingDir", Shape::Str),
            $($extra,)*
        ]
    };
}

/// core/v1 `Container`, also of `initContainers`.
static CONTAINER: Schema = Schema {
    name: "Container",
    fields: container_fields!(),
};

/// core/v1 `EnvVar`.
static ENV_VAR: Schema = Schema {
    name: "EnvVar",
    fields: &[
        (0, "name", Shape::StrKept),
        (0, "value", Shape::Str),
        (0, "valueFrom", Shape::Message(&ENV_VAR_SOURCE)),
    ],
};

/// core/v1 `EnvVarSource`.
static ENV_VAR_SOURCE: Schema = Schema {
    name: "EnvVarSource",
    fields: &[
        (
            0,
            "configMapKeyRef",
            Shape::Message(&CONFIG_MAP_KEY_SELECTOR),
        ),
        (0, "fieldRef", Shape::Message(&OBJECT_FIELD_SELECTOR)),
        (0, "fileKeyRef", Shape::Message(&FILE_KEY_SELECTOR)),
        (
            0,
            "resourceFieldRef",
            Shape::Message(&RESOURCE_FIELD_SELECTOR),
        ),
        (0, "secretKeyRef", Shape::Message(&SECRET_KEY_SELECTOR)),
    ],
};

/// core/v1 `ConfigMapKeySelector`.
static CONFIG_MAP_KEY_SELECTOR: Schema = Schema {
    name: "ConfigMapKeySelector",
    fields: &[
        (0, "key", Shape::StrKept),
        (0, "name", Shape::StrKept),
        (0, "optional", Shape::Bool),
    ],
};

/// core/v1 `ObjectFieldSelector`.
static OBJECT_FIELD_SELECTOR: Schema = Schema {
    name: "ObjectFieldSelector",
    fields: &[
        (0, "apiVersion", Shape::Str),
        (0, "fieldPath", Shape::StrKept),
    ],
};

/// core/v1 `FileKeySelector`.
static FILE_KEY_SELECTOR: Schema = Schema {
    name: "FileKeySelector",
    fields: &[
        (0, "key", Shape::StrKept),
        (0, "optional", Shape::Bool),
        (0, "path", Shape::StrKept),
        (0, "volumeName", Shape::StrKept),
    ],
};

/// core/v1 `ResourceFieldSelector`.
static RESOURCE_FIELD_SELECTOR: Schema = Schema {
    name: "ResourceFieldSelector",
    fields: &[
        (0, "containerName", Shape::Str),
        (0, "divisor", Shape::Quantity),
        (0, "resource", Shape::StrKept),
    ],
};

/// core/v1 `SecretKeySelector`.
static SECRET_KEY_SELECTOR: Schema = Schema {
    name: "SecretKeySelector",
    fields: &[
        (0, "key", Shape::StrKept),
        (0, "name", Shape::StrKept),
        (0, "optional", Shape::Bool),
    ],
};

/// core/v1 `EnvFromSource`.
static ENV_FROM_SOURCE: Schema = Schema {
    name: "EnvFromSource",
    fields: &[
        (0, "configMapRef", Shape::Message(&CONFIG_MAP_ENV_SOURCE)),
        (0, "prefix", Shape::Str),
        (0, "secretRef", Shape::Message(&SECRET_ENV_SOURCE)),
    ],
};

/// core/v1 `ConfigMapEnvSource`.
static CONFIG_MAP_ENV_SOURCE: Schema = Schema {
    name: "ConfigMapEnvSource",
    fields: &[(0, "name", Shape::StrKept), (0, "optional", Shape::Bool)],
};

/// core/v1 `SecretEnvSource`.
static SECRET_ENV_SOURCE: Schema = Schema {
    name: "SecretEnvSource",
    fields: &[(0, "name", Shape::StrKept), (0, "optional", Shape::Bool)],
};

/// core/v1 `Lifecycle`.
static LIFECYCLE: Schema = Schema {
    name: "Lifecycle",
    fields: &[
        (0, "postStart", Shape::Message(&LIFECYCLE_HANDLER)),
        (0, "preStop", Shape::Message(&LIFECYCLE_HANDLER)),
        (0, "stopSignal", Shape::Str),
    ],
};

/// core/v1 `LifecycleHandler`.
static LIFECYCLE_HANDLER: Schema = Schema {
    name: "LifecycleHandler",
    fields: &[
        (0, "exec", Shape::Message(&EXEC_ACTION)),
        (0, "httpGet", Shape::Message(&HTTP_GET_ACTION)),
        (0, "sleep", Shape::Message(&SLEEP_ACTION)),
        (0, "tcpSocket", Shape::Message(&TCP_SOCKET_ACTION)),
    ],
};

/// core/v1 `ExecAction`.
static EXEC_ACTION: Schema = Schema {
    name: "ExecAction",
    fields: &[(0, "command", Shape::Strings)],
};

/// core/v1 `HTTPGetAction`.
static HTTP_GET_ACTION: Schema = Schema {
    name: "HTTPGetAction",
    fields: &[
        (0, "host", Shape::Str),
        (0, "httpHeaders", Shape::Messages(&HTTP_HEADER)),
        (0, "path", Shape::Str),
        (0, "port", Shape::IntOrStr),
        (0, "scheme", Shape::Str),
    ],
};

/// core/v1 `HTTPHeader`.
static HTTP_HEADER: Schema = Schema {
    name: "HTTPHeader",
    fields: &[(0, "name", Shape::StrKept), (0, "value", Shape::StrKept)],
};

/// core/v1 `SleepAction` (`seconds` is a required `int64`).
static SLEEP_ACTION: Schema = Schema {
    name: "SleepAction",
    fields: &[(0, "seconds", Shape::Int64)],
};

/// core/v1 `TCPSocketAction`.
static TCP_SOCKET_ACTION: Schema = Schema {
    name: "TCPSocketAction",
    fields: &[(0, "host", Shape::Str), (0, "port", Shape::IntOrStr)],
};

/// core/v1 `Probe`.
static PROBE: Schema = Schema {
    name: "Probe",
    fields: &[
        (0, "exec", Shape::Message(&EXEC_ACTION)),
        (0, "failureThreshold", Shape::Int32),
        (0, "grpc", Shape::Message(&GRPC_ACTION)),
        (0, "httpGet", Shape::Message(&HTTP_GET_ACTION)),
        (0, "initialDelaySeconds", Shape::Int32),
        (0, "periodSeconds", Shape::Int32),
        (0, "successThreshold", Shape::Int32),
        (0, "tcpSocket", Shape::Message(&TCP_SOCKET_ACTION)),
        (0, "terminationGracePeriodSeconds", Shape::Int64),
        (0, "timeoutSeconds", Shape::Int32),
    ],
};

/// core/v1 `GRPCAction`.
static GRPC_ACTION: Schema = Schema {
    name: "GRPCAction",
    fields: &[(0, "port", Shape::Int32Kept), (0, "service", Shape::Str)],
};

/// core/v1 `ContainerPort`.
static CONTAINER_PORT: Schema = Schema {
    name: "ContainerPort",
    fields: &[
        (0, "containerPort", Shape::Int32Kept),
        (0, "hostIP", Shape::Str),
        (0, "hostPort", Shape::Int32),
        (0, "name", Shape::Str),
        (0, "protocol", Shape::Str),
    ],
};

/// core/v1 `ContainerResizePolicy`.
static CONTAINER_RESIZE_POLICY: Schema = Schema {
    name: "ContainerResizePolicy",
    fields: &[
        (0, "resourceName", Shape::StrKept),
        (0, "restartPolicy", Shape::StrKept),
    ],
};

/// core/v1 `ResourceRequirements`.
static RESOURCE_REQUIREMENTS: Schema = Schema {
    name: "ResourceRequirements",
    fields: &[
        (0, "claims", Shape::Messages(&RESOURCE_CLAIM)),
        (0, "limits", Shape::Map(&QUANTITY_ENTRY)),
        (0, "requests", Shape::Map(&QUANTITY_ENTRY)),
    ],
};

/// core/v1 `ResourceClaim`.
static RESOURCE_CLAIM: Schema = Schema {
    name: "ResourceClaim",
    fields: &[(0, "name", Shape::StrKept), (0, "request", Shape::Str)],
};

/// core/v1 `ContainerRestartRule`.
static CONTAINER_RESTART_RULE: Schema = Schema {
    name: "ContainerRestartRule",
    fields: &[
        (0, "action", Shape::StrKept),
        (
            0,
            "exitCodes",
            Shape::Message(&CONTAINER_RESTART_RULE_ON_EXIT_CODES),
        ),
    ],
};

/// core/v1 `ContainerRestartRuleOnExitCodes` (`values`, integers, opaque).
static CONTAINER_RESTART_RULE_ON_EXIT_CODES: Schema = Schema {
    name: "ContainerRestartRuleOnExitCodes",
    fields: &[
        (0, "operator", Shape::StrKept),
        (0, "values", Shape::Opaque),
    ],
};

/// core/v1 `SecurityContext`.
static SECURITY_CONTEXT: Schema = Schema {
    name: "SecurityContext",
    fields: &[
        (0, "allowPrivilegeEscalation", Shape::Bool),
        (0, "appArmorProfile", Shape::Message(&APP_ARMOR_PROFILE)),
        (0, "capabilities", Shape::Message(&CAPABILITIES)),
        (0, "privileged", Shape::Bool),
        (0, "procMount", Shape::Str),
        (0, "readOnlyRootFilesystem", Shape::Bool),
        (0, "runAsGroup", Shape::Int64),
        (0, "runAsNonRoot", Shape::Bool),
        (0, "runAsUser", Shape::Int64),
        (0, "seLinuxOptions", Shape::Message(&SE_LINUX_OPTIONS)),
        (0, "seccompProfile", Shape::Message(&SECCOMP_PROFILE)),
        (
            0,
            "windowsOptions",
            Shape::Message(&WINDOWS_SECURITY_CONTEXT_OPTIONS),
        ),
    ],
};

/// core/v1 `AppArmorProfile`.
static APP_ARMOR_PROFILE: Schema = Schema {
    name: "AppArmorProfile",
    fields: &[
        (0, "localhostProfile", Shape::Str),
        (0, "type", Shape::StrKept),
    ],
};

/// core/v1 `Capabilities`.
static CAPABILITIES: Schema = Schema {
    name: "Capabilities",
    fields: &[(0, "add", Shape::Strings), (0, "drop", Shape::Strings)],
};

/// core/v1 `SELinuxOptions`.
static SE_LINUX_OPTIONS: Schema = Schema {
    name: "SELinuxOptions",
    fields: &[
        (0, "level", Shape::Str),
        (0, "role", Shape::Str),
        (0, "type", Shape::Str),
        (0, "user", Shape::Str),
    ],
};

/// core/v1 `SeccompProfile`.
static SECCOMP_PROFILE: Schema = Schema {
    name: "SeccompProfile",
    fields: &[
        (0, "localhostProfile", Shape::Str),
        (0, "type", Shape::StrKept),
    ],
};

/// core/v1 `WindowsSecurityContextOptions`.
static WINDOWS_SECURITY_CONTEXT_OPTIONS: Schema = Schema {
    name: "WindowsSecurityContextOptions",
    fields: &[
        (0, "gmsaCredentialSpec", Shape::Str),
        (0, "gmsaCredentialSpecName", Shape::Str),
        (0, "hostProcess", Shape::Bool),
        (0, "runAsUserName", Shape::Str),
    ],
};

/// core/v1 `VolumeDevice`.
static VOLUME_DEVICE: Schema = Schema {
    name: "VolumeDevice",
    fields: &[
        (0, "devicePath", Shape::StrKept),
        (0, "name", Shape::StrKept),
    ],
};

/// core/v1 `VolumeMount`.
static VOLUME_MOUNT: Schema = Schema {
    name: "VolumeMount",
    fields: &[
        (0, "mountPath", Shape::StrKept),
        (0, "mountPropagation", Shape::Str),
        (0, "name", Shape::StrKept),
        (0, "readOnly", Shape::Bool),
        (0, "recursiveReadOnly", Shape::Str),
        (0, "subPath", Shape::Str),
        (0, "subPathExpr", Shape::Str),
    ],
};

/// core/v1 `PodDNSConfig`.
static POD_DNS_CONFIG: Schema = Schema {
    name: "PodDNSConfig",
    fields: &[
        (0, "nameservers", Shape::Strings),
        (0, "options", Shape::Messages(&POD_DNS_CONFIG_OPTION)),
        (0, "searches", Shape::Strings),
    ],
};

/// core/v1 `PodDNSConfigOption`.
static POD_DNS_CONFIG_OPTION: Schema = Schema {
    name: "PodDNSConfigOption",
    fields: &[(0, "name", Shape::Str), (0, "value", Shape::Str)],
};

/// core/v1 `EphemeralContainer`: a `Container` with `targetContainerName`.
static EPHEMERAL_CONTAINER: Schema = Schema {
    name: "EphemeralContainer",
    fields: container_fields!((0, "targetContainerName", Shape::Str)),
};

/// core/v1 `HostAlias`.
static HOST_ALIAS: Schema = Schema {
    name: "HostAlias",
    fields: &[(0, "hostnames", Shape::Strings), (0, "ip", Shape::StrKept)],
};

/// core/v1 `LocalObjectReference`.
pub(crate) static LOCAL_OBJECT_REFERENCE: Schema = Schema {
    name: "LocalObjectReference",
    fields: &[(0, "name", Shape::StrKept)],
};

/// core/v1 `PodOS`.
static POD_OS: Schema = Schema {
    name: "PodOS",
    fields: &[(0, "name", Shape::StrKept)],
};

/// core/v1 `PodReadinessGate`.
static POD_READINESS_GATE: Schema = Schema {
    name: "PodReadinessGate",
    fields: &[(0, "conditionType", Shape::StrKept)],
};

/// core/v1 `PodResourceClaim`.
static POD_RESOURCE_CLAIM: Schema = Schema {
    name: "PodResourceClaim",
    fields: &[
        (0, "name", Shape::StrKept),
        (0, "resourceClaimName", Shape::Str),
        (0, "resourceClaimTemplateName", Shape::Str),
    ],
};

/// core/v1 `PodSchedulingGate`.
static POD_SCHEDULING_GATE: Schema = Schema {
    name: "PodSchedulingGate",
    fields: &[(0, "name", Shape::StrKept)],
};

/// core/v1 `PodSecurityContext` (`supplementalGroups`, integers, opaque).
static POD_SECURITY_CONTEXT: Schema = Schema {
    name: "PodSecurityContext",
    fields: &[
        (0, "appArmorProfile", Shape::Message(&APP_ARMOR_PROFILE)),
        (0, "fsGroup", Shape::Int64),
        (0, "fsGroupChangePolicy", Shape::Str),
        (0, "runAsGroup", Shape::Int64),
        (0, "runAsNonRoot", Shape::Bool),
        (0, "runAsUser", Shape::Int64),
        (0, "seLinuxChangePolicy", Shape::Str),
        (0, "seLinuxOptions", Shape::Message(&SE_LINUX_OPTIONS)),
        (0, "seccompProfile", Shape::Message(&SECCOMP_PROFILE)),
        (0, "supplementalGroups", Shape::Opaque),
        (0, "supplementalGroupsPolicy", Shape::Str),
        (0, "sysctls", Shape::Messages(&SYSCTL)),
        (
            0,
            "windowsOptions",
            Shape::Message(&WINDOWS_SECURITY_CONTEXT_OPTIONS),
        ),
    ],
};

/// core/v1 `Sysctl`.
static SYSCTL: Schema = Schema {
    name: "Sysctl",
    fields: &[(0, "name", Shape::StrKept), (0, "value", Shape::StrKept)],
};

/// core/v1 `Toleration`.
static TOLERATION: Schema = Schema {
    name: "Toleration",
    fields: &[
        (0, "effect", Shape::Str),
        (0, "key", Shape::Str),
        (0, "operator", Shape::Str),
        (0, "tolerationSeconds", Shape::Int64),
        (0, "value", Shape::Str),
    ],
};

/// core/v1 `TopologySpreadConstraint`.
static TOPOLOGY_SPREAD_CONSTRAINT: Schema = Schema {
    name: "TopologySpreadConstraint",
    fields: &[
        (0, "labelSelector", Shape::Message(&LABEL_SELECTOR)),
        (0, "matchLabelKeys", Shape::Strings),
        (0, "maxSkew", Shape::Int32Kept),
        (0, "minDomains", Shape::Int32),
        (0, "nodeAffinityPolicy", Shape::Str),
        (0, "nodeTaintsPolicy", Shape::Str),
        (0, "topologyKey", Shape::StrKept),
        (0, "whenUnsatisfiable", Shape::StrKept),
    ],
};

/// core/v1 `Volume`: the sources other than those below are opaque.
static VOLUME: Schema = Schema {
    name: "Volume",
    fields: &[
        (0, "awsElasticBlockStore", Shape::Opaque),
        (0, "azureDisk", Shape::Opaque),
        (0, "azureFile", Shape::Opaque),
        (0, "cephfs", Shape::Opaque),
        (0, "cinder", Shape::Opaque),
        (0, "configMap", Shape::Message(&CONFIG_MAP_VOLUME_SOURCE)),
        (0, "csi", Shape::Message(&CSI_VOLUME_SOURCE)),
        (
            0,
            "downwardAPI",
            Shape::Message(&DOWNWARD_API_VOLUME_SOURCE),
        ),
        (0, "emptyDir", Shape::Message(&EMPTY_DIR_VOLUME_SOURCE)),
        (0, "ephemeral", Shape::Opaque),
        (0, "fc", Shape::Opaque),
        (0, "flexVolume", Shape::Opaque),
        (0, "flocker", Shape::Opaque),
        (0, "gcePersistentDisk", Shape::Opaque),
        (0, "gitRepo", Shape::Opaque),
        (0, "glusterfs", Shape::Opaque),
        (0, "hostPath", Shape::Message(&HOST_PATH_VOLUME_SOURCE)),
        (0, "image", Shape::Opaque),
        (0, "iscsi", Shape::Opaque),
        (0, "name", Shape::StrKept),
        (0, "nfs", Shape::Opaque),
        (
            0,
            "persistentVolumeClaim",
            Shape::Message(&PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE),
        ),
        (0, "photonPersistentDisk", Shape::Opaque),
        (0, "portworxVolume", Shape::Opaque),
        (0, "projected", Shape::Message(&PROJECTED_VOLUME_SOURCE)),
        (0, "quobyte", Shape::Opaque),
        (0, "rbd", Shape::Opaque),
        (0, "scaleIO", Shape::Opaque),
        (0, "secret", Shape::Message(&SECRET_VOLUME_SOURCE)),
        (0, "storageos", Shape::Opaque),
        (0, "vsphereVolume", Shape::Opaque),
    ],
};

/// core/v1 `ConfigMapVolumeSource`.
static CONFIG_MAP_VOLUME_SOURCE: Schema = Schema {
    name: "ConfigMapVolumeSource",
    fields: &[
        (0, "defaultMode", Shape::Int32),
        (0, "items", Shape::Messages(&KEY_TO_PATH)),
        (0, "name", Shape::StrKept),
        (0, "optional", Shape::Bool),
    ],
};

/// core/v1 `KeyToPath`.
static KEY_TO_PATH: Schema = Schema {
    name: "KeyToPath",
    fields: &[
        (0, "key", Shape::StrKept),
        (0, "mode", Shape::Int32),
        (0, "path", Shape::StrKept),
    ],
};

/// core/v1 `CSIVolumeSource`.
static CSI_VOLUME_SOURCE: Schema = Schema {
    name: "CSIVolumeSource",
    fields: &[
        (0, "driver", Shape::StrKept),
        (0, "fsType", Shape::Str),
        (
            0,
            "nodePublishSecretRef",
            Shape::Message(&LOCAL_OBJECT_REFERENCE),
        ),
        (0, "readOnly", Shape::Bool),
        (0, "volumeAttributes", Shape::Map(&super::STRING_ENTRY)),
    ],
};

/// core/v1 `DownwardAPIVolumeSource`.
static DOWNWARD_API_VOLUME_SOURCE: Schema = Schema {
    name: "DownwardAPIVolumeSource",
    fields: &[
        (0, "defaultMode", Shape::Int32),
        (0, "items", Shape::Messages(&DOWNWARD_API_VOLUME_FILE)),
    ],
};

/// core/v1 `DownwardAPIVolumeFile`.
static DOWNWARD_API_VOLUME_FILE: Schema = Schema {
    name: "DownwardAPIVolumeFile",
    fields: &[
        (0, "fieldRef", Shape::Message(&OBJECT_FIELD_SELECTOR)),
        (0, "mode", Shape::Int32),
        (0, "path", Shape::StrKept),
        (
            0,
            "resourceFieldRef",
            Shape::Message(&RESOURCE_FIELD_SELECTOR),
        ),
    ],
};

/// core/v1 `EmptyDirVolumeSource`.
static EMPTY_DIR_VOLUME_SOURCE: Schema = Schema {
    name: "EmptyDirVolumeSource",
    fields: &[(0, "medium", Shape::Str), (0, "sizeLimit", Shape::Quantity)],
};

/// core/v1 `HostPathVolumeSource`.
static HOST_PATH_VOLUME_SOURCE: Schema = Schema {
    name: "HostPathVolumeSource",
    fields: &[(0, "path", Shape::StrKept), (0, "type", Shape::Str)],
};

/// core/v1 `PersistentVolumeClaimVolumeSource`.
static PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: Schema = Schema {
    name: "PersistentVolumeClaimVolumeSource",
    fields: &[
        (0, "claimName", Shape::StrKept),
        (0, "readOnly", Shape::Bool),
    ],
};

/// core/v1 `ProjectedVolumeSource`.
static PROJECTED_VOLUME_SOURCE: Schema = Schema {
    name: "ProjectedVolumeSource",
    fields: &[
        (0, "defaultMode", Shape::Int32),
        (0, "sources", Shape::Messages(&VOLUME_PROJECTION)),
    ],
};

/// core/v1 `VolumeProjection`.
static VOLUME_PROJECTION: Schema = Schema {
    name: "VolumeProjection",
    fields: &[
        (
            0,
            "clusterTrustBundle",
            Shape::Message(&CLUSTER_TRUST_BUNDLE_PROJECTION),
        ),
        (0, "configMap", Shape::Message(&CONFIG_MAP_PROJECTION)),
        (0, "downwardAPI", Shape::Message(&DOWNWARD_API_PROJECTION)),
        (
            0,
            "podCertificate",
            Shape::Message(&POD_CERTIFICATE_PROJECTION),
        ),
        (0, "secret", Shape::Message(&SECRET_PROJECTION)),
        (
            0,
            "serviceAccountToken",
            Shape::Message(&SERVICE_ACCOUNT_TOKEN_PROJECTION),
        ),
    ],
};

/// core/v1 `ClusterTrustBundleProjection`.
static CLUSTER_TRUST_BUNDLE_PROJECTION: Schema = Schema {
    name: "ClusterTrustBundleProjection",
    fields: &[
        (0, "labelSelector", Shape::Message(&LABEL_SELECTOR)),
        (0, "name", Shape::Str),
        (0, "optional", Shape::Bool),
        (0, "path", Shape::StrKept),
        (0, "signerName", Shape::Str),
    ],
};

/// core/v1 `ConfigMapProjection`.
static CONFIG_MAP_PROJECTION: Schema = Schema {
    name: "ConfigMapProjection",
    fields: &[
        (0, "items", Shape::Messages(&KEY_TO_PATH)),
        (0, "name", Shape::StrKept),
        (0, "optional", Shape::Bool),
    ],
};

/// core/v1 `DownwardAPIProjection`.
static DOWNWARD_API_PROJECTION: Schema = Schema {
    name: "DownwardAPIProjection",
    fields: &[(0, "items", Shape::Messages(&DOWNWARD_API_VOLUME_FILE))],
};

/// core/v1 `PodCertificateProjection`.
static POD_CERTIFICATE_PROJECTION: Schema = Schema {
    name: "PodCertificateProjection",
    fields: &[
        (0, "certificateChainPath", Shape::Str),
        (0, "credentialBundlePath", Shape::Str),
        (0, "keyPath", Shape::Str),
        (0, "keyType", Shape::StrKept),
        (0, "maxExpirationSeconds", Shape::Int32),
        (0, "signerName", Shape::StrKept),
    ],
};

/// core/v1 `SecretProjection`.
static SECRET_PROJECTION: Schema = Schema {
    name: "SecretProjection",
    fields: &[
        (0, "items", Shape::Messages(&KEY_TO_PATH)),
        (0, "name", Shape::StrKept),
        (0, "optional", Shape::Bool),
    ],
};

/// core/v1 `ServiceAccountTokenProjection`.
static SERVICE_ACCOUNT_TOKEN_PROJECTION: Schema = Schema {
    name: "ServiceAccountTokenProjection",
    fields: &[
        (0, "audience", Shape::Str),
        (0, "expirationSeconds", Shape::Int64),
        (0, "path", Shape::StrKept),
    ],
};

/// core/v1 `SecretVolumeSource`.
static SECRET_VOLUME_SOURCE: Schema = Schema {
    name: "SecretVolumeSource",
    fields: &[
        (0, "defaultMode", Shape::Int32),
        (0, "items", Shape::Messages(&KEY_TO_PATH)),
        (0, "optional", Shape::Bool),
        (0, "secretName", Shape::Str),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::round_trip::assert_round_trips;

    #[test]
    fn pod_template_spec_round_trips() {
        assert_round_trips::<k8s_openapi::api::core::v1::PodTemplateSpec>(&POD_TEMPLATE_SPEC);
    }
}
