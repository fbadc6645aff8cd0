//! The sidecar's logs: `tracing` events as lines on stderr, text or JSON, filtered
//! by `RUST_LOG` (default `info`).
//!
//! Leadership changes are logged once each, by [`election_ops::Monitor`] (target
//! `election_ops::monitor`), with the lock, the identity, the term and, on a stop,
//! the reason on the line itself: `started leading`, `draining leader work`,
//! `stopped leading`. The election driver logs the same transitions in its own
//! words (term and reason only, the identity in its span); those few info lines of
//! `election_driver` are left out, so that each change is one line. The driver's
//! other lines (watch restarts, problems, and with `RUST_LOG=debug` every lock call)
//! pass as `RUST_LOG` says.

use std::io;

use tracing::Metadata;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, filter_fn};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::prelude::*;

/// The environment variable read for the filter.
pub const FILTER_ENV: &str = "RUST_LOG";

/// How log lines look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `2025-01-02T03:04:05.678901Z  INFO target: message key=value …`.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `message`, the event's
    /// fields, `target`, and the current span if any.
    Json,
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// `RUST_LOG` is not a valid filter.
    #[error("invalid {FILTER_ENV} {spec:?}: {source}")]
    Filter {
        /// The value given.
        spec: String,
        /// What is wrong with it.
        source: tracing_subscriber::filter::ParseError,
    },
    /// `RUST_LOG` is not valid Unicode.
    #[error("invalid {FILTER_ENV}: not valid Unicode")]
    NotUnicode,
    /// A global subscriber was already set.
    #[error("failed to set up logging: {0}")]
    Init(#[from] tracing_subscriber::util::TryInitError),
}

/// The filter for `spec` (the value of `RUST_LOG`; `None` or blank: `info`).
pub fn env_filter(spec: Option<&str>) -> Result<EnvFilter, LogError> {
    let spec = spec.unwrap_or("").trim();
    EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .parse(spec)
        .map_err(|source| LogError::Filter {
            spec: spec.to_owned(),
            source,
        })
}

/// Whether an event repeats a leadership change that the monitor logs with more
/// context: the election driver's info events that carry a term or a stop reason
/// (`started leading`, `draining leader work`, `stopped leading`, `leader work
/// ended by itself`).
fn repeated(meta: &Metadata<'_>) -> bool {
    meta.is_event()
        && *meta.level() == tracing::Level::INFO
        && meta.target().starts_with("election_driver")
        && (meta.fields().field("term").is_some() || meta.fields().field("reason").is_some())
}

/// A subscriber writing `format` lines through `writer`, filtered by `filter`.
pub fn subscriber<W>(
    format: LogFormat,
    filter: EnvFilter,
    writer: W,
) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_writer(writer).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(writer)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(layer.with_filter(filter_fn(|meta| !repeated(meta))))
}

/// Installs the global subscriber: `format` lines on stderr, filtered by
/// `RUST_LOG` (default `info`).
pub fn init(format: LogFormat) -> Result<(), LogError> {
    let spec = match std::env::var(FILTER_ENV) {
        Ok(spec) => Some(spec),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => return Err(LogError::NotUnicode),
    };
    let filter = env_filter(spec.as_deref())?;
    subscriber(format, filter, io::stderr).try_init()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("buffer").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("buffer").clone()).expect("UTF-8")
        }
    }

    /// Logs what a leadership that is lost logs (the driver's and the monitor's
    /// lines; the monitor warns of a loss, a graceful stop is info) through a
    /// subscriber of `format` filtered by `spec`; the lines written.
    fn log_a_change(format: LogFormat, spec: Option<&str>) -> Vec<String> {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let filter = env_filter(spec).expect("a valid filter");
        tracing::subscriber::with_default(
            subscriber(format, filter, move || writer.clone()),
            || {
                tracing::info!(target: "election_driver::driver", term = "1@7", "started leading");
                tracing::info!(target: "election_ops::monitor", lock = "Lease default/a", identity = "a", term = "1@7", "started leading");
                tracing::info!(target: "election_driver::driver", why = "idle", "restarting the lock watch");
                tracing::debug!(target: "election_driver::driver", op = "Get", "lock call");
                tracing::info!(target: "election_driver::driver", term = "1@7", reason = "renew deadline exceeded", "stopped leading");
                tracing::warn!(target: "election_ops::monitor", lock = "Lease default/a", identity = "a", term = "1@7", reason = "renew deadline exceeded", "stopped leading");
            },
        );
        buffer.text().lines().map(str::to_owned).collect()
    }

    #[test]
    fn json_lines_carry_the_fields_and_each_change_is_logged_once() {
        let lines = log_a_change(LogFormat::Json, None);
        let events: Vec<serde_json::Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let messages: Vec<&str> = events
            .iter()
            .map(|e| e["message"].as_str().expect("a message"))
            .collect();
        // The driver's repeats are gone; its other info line stays; debug is off.
        assert_eq!(
            messages,
            [
                "started leading",
                "restarting the lock watch",
                "stopped leading"
            ],
            "{lines:?}"
        );
        let started = &events[0];
        assert_eq!(started["level"], "INFO");
        assert_eq!(started["target"], "election_ops::monitor");
        assert_eq!(started["term"], "1@7");
        assert_eq!(started["identity"], "a");
        assert_eq!(events[2]["level"], "WARN");
        assert_eq!(events[2]["reason"], "renew deadline exceeded");
    }

    #[test]
    fn the_filter_follows_rust_log() {
        let lines = log_a_change(LogFormat::Text, Some("warn"));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("WARN") && lines[0].contains("stopped leading"),
            "{lines:?}"
        );
        // The driver's own lines can be asked for; its repeats stay out.
        let lines = log_a_change(LogFormat::Text, Some("info,election_driver=debug"));
        assert!(lines.iter().any(|l| l.contains("lock call")), "{lines:?}");
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("started leading"))
                .count(),
            1,
            "{lines:?}"
        );
        assert!(matches!(
            env_filter(Some("info,election_driver=loud")),
            Err(LogError::Filter { .. })
        ));
    }
}
