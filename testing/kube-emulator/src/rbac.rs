//! Checks the requests a client made against the rules of an RBAC Role, so that a
//! lock's tests can show that the Role it ships grants every request it makes.
//!
//! The Role is read from YAML minimally: the first document of kind `Role` or
//! `ClusterRole` (else the first document), its `rules`, each with `apiGroups`,
//! `resources` and `verbs` written as flow lists (`verbs: ["get", "create"]`),
//! as the Roles of this workspace are.

use crate::faults::RequestCounts;
use crate::resource::{Resource, Verb};

/// One rule of a Role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    /// `apiGroups` (`""` is the core group).
    pub api_groups: Vec<String>,
    /// `resources` (plural names).
    pub resources: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
}

impl Rule {
    /// Whether the rule allows `verb` on `resource`.
    pub fn allows(&self, verb: Verb, resource: Resource) -> bool {
        let any = |list: &[String], item: &str| list.iter().any(|x| x == item || x == "*");
        any(&self.api_groups, resource.group())
            && any(&self.resources, resource.plural())
            && any(&self.verbs, verb.as_str())
    }
}

/// The rules of the Role in `yaml`: its first document of kind `Role` or
/// `ClusterRole`, else its first document. Lines it does not understand are
/// skipped; a rule starts at each `- apiGroups:` item.
pub fn role_rules(yaml: &str) -> Vec<Rule> {
    let documents: Vec<Vec<&str>> = yaml
        .split('\n')
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .collect::<Vec<_>>()
        .split(|line| *line == "---")
        .map(<[&str]>::to_vec)
        .collect();
    let is_role = |doc: &&Vec<&str>| {
        doc.iter()
            .any(|line| matches!(*line, "kind: Role" | "kind: ClusterRole"))
    };
    let role = documents
        .iter()
        .find(is_role)
        .or(documents.first())
        .map_or(&[][..], Vec::as_slice);
    let mut rules: Vec<Rule> = Vec::new();
    for &line in role {
        let (starts_rule, line) = match line.strip_prefix("- ") {
            Some(rest) => (true, rest.trim()),
            None => (false, line),
        };
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        if !matches!(key, "apiGroups" | "resources" | "verbs") {
            continue;
        }
        if starts_rule || rules.is_empty() {
            rules.push(Rule::default());
        }
        let list = flow_list(value);
        if let Some(rule) = rules.last_mut() {
            match key {
                "apiGroups" => rule.api_groups = list,
                "resources" => rule.resources = list,
                _ => rule.verbs = list,
            }
        }
    }
    rules
}

fn flow_list(value: &str) -> Vec<String> {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .map(|s| s.trim().trim_matches('"').trim_matches('\'').to_owned())
        .filter(|s| !s.is_empty() || inner.contains("\"\""))
        .collect()
}

/// The requests of `client` in `counts` that no rule of `rules` allows, as
/// `(verb, resource)`.
pub fn not_granted(counts: &RequestCounts, client: &str, rules: &[Rule]) -> Vec<(Verb, Resource)> {
    counts
        .iter()
        .filter(|(c, _, _, n)| *c == client && *n > 0)
        .filter(|(_, v, r, _)| !rules.iter().any(|rule| rule.allows(*v, *r)))
        .map(|(_, v, r, _)| (v, r))
        .collect()
}

/// What `rules` grant on the served resources that `client` never asked for
/// in `counts`, as `(verb, resource)`: empty when the Role grants no more than
/// the requests counted needed (least privilege, for that session).
pub fn unused(counts: &RequestCounts, client: &str, rules: &[Rule]) -> Vec<(Verb, Resource)> {
    let mut unused = Vec::new();
    for &resource in Resource::ALL {
        for verb in Verb::ALL {
            let granted = rules.iter().any(|rule| rule.allows(verb, resource));
            if granted && counts.get(client, verb, resource) == 0 {
                unused.push((verb, resource));
            }
        }
    }
    unused
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLE: &str = r#"
kind: ServiceAccount
metadata:
  name: sa
---
kind: Role
rules:
  # a comment: verbs: ["delete"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "watch"]
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["create"]
---
kind: RoleBinding
"#;

    #[test]
    fn rules_are_read_and_applied() {
        let rules = role_rules(ROLE);
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert_eq!(rules[1].api_groups, [""]);
        assert!(rules[0].allows(Verb::Watch, Resource::Lease));
        assert!(!rules[0].allows(Verb::List, Resource::Lease));
        assert!(!rules[0].allows(Verb::Get, Resource::ConfigMap));
        assert!(rules[1].allows(Verb::Create, Resource::Event));
        assert!(
            !rules[1].allows(Verb::Create, Resource::EventV1),
            "another group"
        );
    }
}
