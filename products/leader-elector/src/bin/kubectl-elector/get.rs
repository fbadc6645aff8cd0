//! `kubectl elector get`: one row per election, or the `ElectionList` as JSON
//! or YAML.

use std::io::Write;

use k8s_openapi::jiff::Timestamp;

use crate::cli::Output;
use crate::client::Target;
use crate::election::{Election, Gatherer, Scope, list_json};
use crate::error::Error;
use crate::format;
use crate::table;

/// Lists the elections of the namespace (or every one, `all_namespaces`), or
/// the one named.
pub async fn run(
    target: &Target,
    all_namespaces: bool,
    name: Option<&str>,
    output: Option<Output>,
    all_leases: bool,
) -> Result<(), Error> {
    if all_namespaces && name.is_some() {
        return Err(Error::Usage(
            "a Lease cannot be named across all namespaces: drop -A, or drop the NAME".to_owned(),
        ));
    }
    let scope = if all_namespaces {
        Scope::All
    } else {
        Scope::Namespace(target.namespace.clone())
    };
    let mut gatherer = Gatherer::new(target.client.clone());
    let leases = match name {
        // A Lease named is shown whatever it is.
        Some(name) => vec![gatherer.lease(&target.namespace, name).await?],
        None => gatherer.leases(&scope, all_leases).await?,
    };
    let elections = gatherer.elections(leases, &scope).await?;
    for note in gatherer.notes() {
        eprintln!("{note}");
    }
    let now = Timestamp::now();
    let mut stdout = std::io::stdout().lock();
    match output {
        Some(Output::Json) => {
            let text = serde_json::to_string_pretty(&list_json(&elections, now))
                .map_err(std::io::Error::from)?;
            writeln!(stdout, "{text}")?;
        }
        Some(Output::Yaml) => {
            write!(
                stdout,
                "{}",
                election_ops::yaml::to_yaml(&list_json(&elections, now))
            )?;
        }
        Some(Output::Wide) | None if elections.is_empty() => match &scope {
            Scope::Namespace(ns) => eprintln!("No elections found in namespace {ns}."),
            Scope::All => eprintln!("No elections found."),
        },
        Some(Output::Wide) | None => {
            let wide = output == Some(Output::Wide);
            write!(stdout, "{}", render(&elections, now, all_namespaces, wide))?;
        }
    }
    stdout.flush()?;
    Ok(())
}

/// The table: (NAMESPACE) NAME HOLDER TERM RENEWED STATE POD FENCE, and with
/// `wide` CANDIDATES STRATEGY PREFERRED ACQUIRED.
pub fn render(elections: &[Election], now: Timestamp, namespaces: bool, wide: bool) -> String {
    let mut headers = Vec::new();
    if namespaces {
        headers.push("NAMESPACE");
    }
    headers.extend(["NAME", "HOLDER", "TERM", "RENEWED", "STATE", "POD", "FENCE"]);
    if wide {
        headers.extend(["CANDIDATES", "STRATEGY", "PREFERRED", "ACQUIRED"]);
    }
    let rows: Vec<Vec<String>> = elections
        .iter()
        .map(|e| {
            let mut row = Vec::new();
            if namespaces {
                row.push(e.namespace.clone());
            }
            row.extend([
                e.name.clone(),
                e.holder.clone().unwrap_or_else(|| "<none>".to_owned()),
                e.term.to_string(),
                format::renewed(e.renewed_ago_millis(now), e.lease_duration_secs),
                e.state(now).as_str().to_owned(),
                e.pod.cell(),
                e.fence_cell(),
            ]);
            if wide {
                let none = || "<none>".to_owned();
                row.extend([
                    e.candidates_cell(),
                    e.strategy.clone().unwrap_or_else(none),
                    e.preferred_holder.clone().unwrap_or_else(none),
                    e.acquired_ago_millis(now)
                        .map_or_else(|| "<unknown>".to_owned(), format::age),
                ]);
            }
            row
        })
        .collect();
    table::render(&headers, &rows)
}
