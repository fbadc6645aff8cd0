//! `deploy/monitoring/` against what a running election exports: two candidates
//! on the Lease lock over the API emulator, each serving `/metrics` as the
//! sidecar does, a failover and failed lock calls between them, then a scrape of
//! both over HTTP. The Grafana dashboard's queries, the PrometheusRule's
//! expressions and the input series of its `promtool` tests may name only the
//! metrics and labels found there (plus the target labels `namespace` and `pod`
//! a PodMonitor adds), and the dashboard shows every family. The rules
//! themselves are tested by `promtool test rules` (ignored unless promtool is
//! installed: Debian's `prometheus` package, which `.ci/install` brings).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{candidate, get, wait_until};
use election_ops::health::Health;
use election_ops::http::Endpoint;
use kube_emulator::Emulator;
use serde_json::Value;

/// The labels Prometheus adds to every series it scrapes from a Pod.
const TARGET_LABELS: [&str; 2] = ["namespace", "pod"];

fn monitoring_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring")
}

fn read(file: &str) -> String {
    let path = monitoring_dir().join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rules file inside the PrometheusRule: its `spec` (`groups:`).
fn rules() -> Value {
    let rule: Value = serde_saphyr::from_str(&read("prometheusrule.yaml")).expect("YAML");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["kind"], "PrometheusRule");
    rule["spec"].clone()
}

/// What a scrape holds: each sample name with the label keys its series carry,
/// and the `le` bounds of the histograms' buckets.
#[derive(Debug, Default)]
struct Exported {
    labels: BTreeMap<String, BTreeSet<String>>,
    families: BTreeSet<String>,
    bounds: BTreeSet<String>,
}

impl Exported {
    fn add(&mut self, text: &str) {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let family = rest.split(' ').next().unwrap_or_default();
                self.families.insert(family.to_owned());
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (name, labels) = match line.split_once('{') {
                Some((name, rest)) => (name, rest.split_once('}').expect("labels end").0),
                None => (line.split(' ').next().unwrap_or_default(), ""),
            };
            let keys = self.labels.entry(name.to_owned()).or_default();
            for pair in labels.split(',').filter(|p| !p.is_empty()) {
                let (key, value) = pair.split_once('=').expect("label=value");
                keys.insert(key.to_owned());
                if key == "le" {
                    self.bounds.insert(value.trim_matches('"').to_owned());
                }
            }
        }
    }

    /// The label keys `metric` may be queried by: its own and the target's.
    fn allowed(&self, metric: &str) -> Option<BTreeSet<String>> {
        let mut keys = self.labels.get(metric)?.clone();
        keys.extend(TARGET_LABELS.map(String::from));
        Some(keys)
    }
}

/// Two candidates of one election, each with its own registry and endpoint as
/// two Pods would have; a failover (the first leader steps down) and two failed
/// reads; the text of both endpoints' `/metrics`.
async fn scrape_running_election() -> Exported {
    let emu = Emulator::start().await.expect("emulator");
    emu.faults("node-a").times(2).error(503);
    let mut addrs = Vec::new();
    let mut nodes = Vec::new();
    for id in ["node-a", "node-b"] {
        let (handle, monitor) = candidate(&emu, id);
        let mut registry = prometheus_client::registry::Registry::default();
        monitor.register_metrics(&mut registry);
        let health = Health::new(Arc::clone(&handle)).monitor(Arc::clone(&monitor));
        let addr = Endpoint::new(health)
            .metrics(Arc::clone(&monitor), registry)
            .spawn("127.0.0.1:0".parse().unwrap())
            .await
            .expect("bind");
        addrs.push(addr);
        nodes.push((handle, monitor));
    }
    let renewed = |i: usize| nodes[i].1.snapshot().last_renew.is_some();
    let leader =
        |nodes: &[(Arc<election_driver::Handle>, _)]| nodes.iter().position(|(h, _)| h.is_leader());
    assert!(wait_until(Duration::from_secs(10), || leader(&nodes).is_some()).await);
    let first = leader(&nodes).unwrap();
    assert!(wait_until(Duration::from_secs(5), || renewed(first)).await);
    nodes[first].0.step_down().await;
    let second = 1 - first;
    assert!(
        wait_until(Duration::from_secs(10), || nodes[second].0.is_leader()
            && renewed(second))
        .await,
        "the other candidate took over and renewed"
    );
    let mut exported = Exported::default();
    for addr in addrs {
        let (code, text) = get(addr, "/metrics").await;
        assert_eq!(code, 200, "{text}");
        exported.add(&text);
    }
    for (handle, _) in &nodes {
        handle.shutdown().await;
    }
    exported
}

/// The metric names and label keys a PromQL expression uses (a reading good
/// for the queries in deploy/monitoring, not a PromQL parser): identifiers
/// naming this library's metrics or a recording rule (`a:b:c`), the labels of
/// `by`/`on`/`without`/`ignoring`/`group_*` lists and of selectors.
#[derive(Debug, Default, PartialEq)]
struct Uses {
    metrics: BTreeSet<String>,
    labels: BTreeSet<String>,
}

fn uses(expr: &str) -> Uses {
    let mut out = Uses::default();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let mut in_selector = false;
    let mut in_list = false;
    let mut last_word = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            // A string: skip to its closing quote.
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if c == '[' {
            // A range or subquery: durations and Grafana's variables.
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
            continue;
        }
        if c == '$' {
            // A Grafana variable.
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "_:".contains(chars[i])) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = chars[i..].iter().find(|c| !c.is_whitespace()).copied();
            if in_list || (in_selector && matches!(next, Some('=' | '!'))) {
                out.labels.insert(word.clone());
            } else if word.starts_with("leader_election_") || word.contains(':') {
                out.metrics.insert(word.clone());
            }
            last_word = word;
            continue;
        }
        match c {
            '{' => in_selector = true,
            '}' => in_selector = false,
            '(' if matches!(
                last_word.as_str(),
                "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
            ) =>
            {
                in_list = true
            }
            ')' => in_list = false,
            _ => {}
        }
        if !c.is_whitespace() {
            last_word.clear();
        }
        i += 1;
    }
    out
}

/// The labels of a legend (`{{namespace}}/{{name}}`).
fn legend_labels(legend: &str) -> BTreeSet<String> {
    legend
        .split("{{")
        .skip(1)
        .filter_map(|s| s.split_once("}}"))
        .map(|(label, _)| label.trim().to_owned())
        .collect()
}

/// Why `expr` (with the legend's labels) does not fit what was exported, if
/// it does not: a metric not exported, or a label that no metric of it has.
/// `recorded`: the recording rules' names and their `by` labels.
fn misfits(
    expr: &str,
    legend: &BTreeSet<String>,
    exported: &Exported,
    recorded: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let used = uses(expr);
    let mut why = Vec::new();
    let mut allowed = BTreeSet::new();
    if used.metrics.is_empty() {
        why.push(format!("{expr}: names no metric of the library"));
    }
    for metric in &used.metrics {
        match exported
            .allowed(metric)
            .or_else(|| recorded.get(metric).cloned())
        {
            Some(keys) => allowed.extend(keys),
            None => why.push(format!("{expr}: {metric} is not exported")),
        }
    }
    for label in used.labels.iter().chain(legend) {
        if !allowed.contains(label) {
            why.push(format!("{expr}: no metric of it has the label {label}"));
        }
    }
    why
}

fn dashboard() -> Value {
    serde_json::from_str(&read("grafana-dashboard.json")).expect("JSON")
}

/// Every panel's queries, with their legends; each panel has one at least.
fn panel_queries(dashboard: &Value) -> Vec<(String, String)> {
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6, "{}", panels.len());
    let mut queries = Vec::new();
    for panel in panels {
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{}: no query", panel["title"]);
        for target in targets {
            let expr = target["expr"].as_str().expect("expr");
            let legend = target["legendFormat"].as_str().unwrap_or("");
            queries.push((expr.to_owned(), legend.to_owned()));
        }
    }
    queries
}

/// The recording rules of the PrometheusRule, with the labels they keep.
fn recorded(rules: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for group in rules["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            if let Some(name) = rule["record"].as_str() {
                let mut keys = uses(rule["expr"].as_str().expect("expr")).labels;
                keys.remove("le");
                out.insert(name.to_owned(), keys);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_rules_and_their_tests_use_only_what_a_running_election_exports() {
    let exported = scrape_running_election().await;
    eprintln!("exported: {exported:#?}");
    // The scrape itself holds every family the docs of `metrics` list.
    for family in [
        "leader_election_master_status",
        "leader_election_slowpath",
        "leader_election_transitions",
        "leader_election_renew_duration_seconds",
        "leader_election_seconds_to_deadline",
        "leader_election_lock_errors",
        "leader_election_stops",
        "leader_election_healthy",
    ] {
        assert!(exported.families.contains(family), "{family} not scraped");
    }
    assert!(exported.labels["leader_election_lock_errors_total"].contains("class"));
    assert!(exported.labels["leader_election_stops_total"].contains("reason"));

    let rules = rules();
    let recorded = recorded(&rules);
    let mut why = Vec::new();

    // The dashboard: every query, every variable.
    let dashboard = dashboard();
    let mut shown = BTreeSet::new();
    for (expr, legend) in panel_queries(&dashboard) {
        why.extend(misfits(
            &expr,
            &legend_labels(&legend),
            &exported,
            &BTreeMap::new(),
        ));
        shown.extend(uses(&expr).metrics);
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        if let Some(query) = variable["query"]["query"].as_str() {
            // label_values(METRIC{…}, LABEL): the label, as a selector's.
            let (selector, label) = query
                .trim_start_matches("label_values(")
                .trim_end_matches(')')
                .rsplit_once(',')
                .expect("label_values(metric, label)");
            let expr = format!("{selector} and on ({}) {selector}", label.trim());
            why.extend(misfits(
                &expr,
                &BTreeSet::new(),
                &exported,
                &BTreeMap::new(),
            ));
        }
    }
    for family in &exported.families {
        assert!(
            shown.iter().any(|m| m.starts_with(family.as_str())),
            "no panel shows {family}"
        );
    }

    // The rules: metrics exported or recorded by the rules themselves.
    for group in rules["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let expr = rule["expr"].as_str().expect("expr");
            why.extend(misfits(expr, &BTreeSet::new(), &exported, &recorded));
        }
    }

    // The rules' tests: each input series named and labelled as scraped.
    let tests: Value = serde_saphyr::from_str(&read("rules-test.yaml")).expect("YAML");
    let mut inputs = 0;
    for test in tests["tests"].as_array().expect("tests") {
        for input in test["input_series"].as_array().expect("input_series") {
            let series = input["series"].as_str().expect("series");
            let (name, labels) = series.split_once('{').expect("name{labels}");
            let mut keys = BTreeSet::new();
            for pair in labels.trim_end_matches('}').split(',') {
                let (key, value) = pair.split_once('=').expect("label=value");
                let value = value.trim().trim_matches('"');
                if key.trim() == "le" && !exported.bounds.contains(value) {
                    why.push(format!(
                        "{series}: le={value} is no bound the library exports"
                    ));
                }
                keys.insert(key.trim().to_owned());
            }
            match exported.allowed(name) {
                Some(allowed) if allowed == keys => {}
                Some(allowed) => {
                    why.push(format!("{series}: labels {keys:?}, scraped {allowed:?}"))
                }
                None => why.push(format!("{series}: {name} is not exported")),
            }
            inputs += 1;
        }
    }
    assert!(inputs >= 10, "{inputs} input series");
    assert!(why.is_empty(), "{why:#?}");
}

/// The reading of PromQL above finds what it should, so that the check can fail.
#[test]
fn the_promql_reading_finds_metrics_and_labels() {
    let used = uses(
        r#"sum by (namespace, name) (rate(leader_election_lock_errors_total{class="conflict", name=~"$election"}[$__rate_interval])) and on (pod) election:leaders:sum"#,
    );
    assert_eq!(
        used.metrics,
        BTreeSet::from([
            "leader_election_lock_errors_total".into(),
            "election:leaders:sum".into()
        ])
    );
    assert_eq!(
        used.labels,
        BTreeSet::from([
            "namespace".into(),
            "name".into(),
            "class".into(),
            "pod".into()
        ])
    );
    let mut exported = Exported::default();
    exported.add("# TYPE leader_election_stops counter\nleader_election_stops_total{name=\"a\",reason=\"released\"} 1\n");
    let none = BTreeMap::new();
    assert!(
        misfits(
            "leader_election_stops_total{reason=\"x\"}",
            &BTreeSet::new(),
            &exported,
            &none
        )
        .is_empty()
    );
    assert_eq!(
        misfits(
            "sum by (class) (leader_election_stops_total)",
            &BTreeSet::new(),
            &exported,
            &none
        )
        .len(),
        1
    );
    assert_eq!(
        misfits(
            "leader_election_stop_total",
            &BTreeSet::new(),
            &exported,
            &none
        )
        .len(),
        1
    );
    assert_eq!(
        legend_labels("{{reason}} {{ namespace }}/x"),
        BTreeSet::from(["reason".into(), "namespace".into()])
    );
}

/// `promtool check rules` and `promtool test rules` on the PrometheusRule's
/// `spec`, with deploy/monitoring/rules-test.yaml; and `promtool check rules`
/// on the dashboard's queries, each as a recording rule with Grafana's
/// variables set, so that a query Prometheus cannot parse fails here.
#[test]
#[ignore = "needs promtool (Debian's prometheus package: bash .ci/install); CI runs it"]
fn promtool_tests_the_alerts_and_recording_rules() {
    let dir = std::env::temp_dir().join(format!("kube-elector-promtool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // JSON is YAML: the spec as promtool's rules file.
    std::fs::write(dir.join("rules.yaml"), rules().to_string()).expect("write rules");
    std::fs::write(dir.join("rules-test.yaml"), read("rules-test.yaml")).expect("write tests");
    let queries: Vec<Value> = panel_queries(&dashboard())
        .into_iter()
        .enumerate()
        .map(|(i, (expr, _))| {
            let expr = expr
                .replace("$namespace", ".*")
                .replace("$election", ".*")
                .replace("$__rate_interval", "1m")
                .replace("$__range", "1h");
            serde_json::json!({ "record": format!("dashboard:query_{i}"), "expr": expr })
        })
        .collect();
    let panels = serde_json::json!({ "groups": [{ "name": "dashboard", "rules": queries }] });
    std::fs::write(dir.join("dashboard.yaml"), panels.to_string()).expect("write queries");
    for args in [
        ["check", "rules", "rules.yaml"],
        ["test", "rules", "rules-test.yaml"],
        ["check", "rules", "dashboard.yaml"],
    ] {
        let out = std::process::Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("promtool (Debian's prometheus package: bash .ci/install)");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("promtool {}: {text}", args.join(" "));
        assert!(out.status.success(), "promtool {}: {text}", args.join(" "));
        assert!(text.contains("SUCCESS"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
