//! The line a peer prints for each event, the same from the client-go peer
//! (`testing/client-go-peer`) and from `elector-peer`:
//!
//! ```text
//! <mono_ns> <wall> <identity> <event>[ <arg>]
//! ```
//!
//! `<mono_ns>` is `CLOCK_MONOTONIC` in nanoseconds, one clock for every process
//! of the machine, so the lines of different peers (and the harness's own
//! instants, [`mono_now`]) compare; `<wall>` is the UTC wall time in RFC 3339
//! with nanoseconds, for people.

use std::fmt;

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn mono_now() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// The UTC wall time now, `2006-01-02T15:04:05.000000000Z`.
pub fn wall_now() -> String {
    let now = jiff::Timestamp::now();
    format!(
        "{}.{:09}Z",
        now.strftime("%Y-%m-%dT%H:%M:%S"),
        now.subsec_nanosecond()
    )
}

/// What a line reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The process is up, a candidate.
    Started,
    /// It starts leading: its leader work starts.
    Leading,
    /// Its leader work acts (every tick while it leads).
    Tick,
    /// It stops leading: its leader work has stopped.
    Stopped,
    /// It sees a new leader (`None`: no leader).
    Leader(Option<String>),
    /// It is about to exit.
    Exit,
}

/// One line of a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// `CLOCK_MONOTONIC`, nanoseconds.
    pub mono: u64,
    /// UTC, RFC 3339.
    pub wall: String,
    /// The peer's identity.
    pub identity: String,
    /// What happened.
    pub event: Event,
}

/// A line that does not read as one.
#[derive(Debug, PartialEq, Eq)]
pub struct BadLine(pub String);

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a peer's line: {:?}", self.0)
    }
}

impl std::error::Error for BadLine {}

impl Line {
    /// The line of `identity`'s `event`, now.
    pub fn now(identity: &str, event: Event) -> Self {
        Line {
            mono: mono_now(),
            wall: wall_now(),
            identity: identity.to_owned(),
            event,
        }
    }

    /// Reads one line as a peer prints it.
    pub fn parse(s: &str) -> Result<Self, BadLine> {
        let bad = || BadLine(s.to_owned());
        let mut parts = s.trim_end().splitn(5, ' ');
        let mono = parts.next().and_then(|m| m.parse().ok()).ok_or_else(bad)?;
        let wall = parts.next().ok_or_else(bad)?.to_owned();
        let identity = parts.next().ok_or_else(bad)?.to_owned();
        let event = match (parts.next(), parts.next()) {
            (Some("started"), None) => Event::Started,
            (Some("leading"), None) => Event::Leading,
            (Some("tick"), None) => Event::Tick,
            (Some("stopped"), None) => Event::Stopped,
            (Some("exit"), None) => Event::Exit,
            (Some("leader"), None) => Event::Leader(None),
            (Some("leader"), Some(id)) => Event::Leader(Some(id.to_owned())),
            _ => return Err(bad()),
        };
        Ok(Line {
            mono,
            wall,
            identity,
            event,
        })
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {} ", self.mono, self.wall, self.identity)?;
        match &self.event {
            Event::Started => write!(f, "started"),
            Event::Leading => write!(f, "leading"),
            Event::Tick => write!(f, "tick"),
            Event::Stopped => write!(f, "stopped"),
            Event::Exit => write!(f, "exit"),
            Event::Leader(None) => write!(f, "leader"),
            Event::Leader(Some(id)) => write!(f, "leader {id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_printed() {
        for event in [
            Event::Started,
            Event::Leading,
            Event::Tick,
            Event::Stopped,
            Event::Exit,
            Event::Leader(None),
            Event::Leader(Some("g-1".into())),
        ] {
            let line = Line::now("r-0", event);
            assert_eq!(Line::parse(&line.to_string()), Ok(line));
        }
        let go = "1234567890 2026-11-27T15:03:52.000000001Z g-0 leader r-1\n";
        let line = Line::parse(go).unwrap();
        assert_eq!(
            (line.mono, line.identity.as_str(), line.event),
            (1_234_567_890, "g-0", Event::Leader(Some("r-1".into())))
        );
        assert!(Line::parse("12 x g-0 dancing").is_err());
        assert!(Line::parse("twelve x g-0 tick").is_err());
        assert!(Line::parse("12 x g-0 tick extra").is_err());
    }

    #[test]
    fn the_monotonic_clock_moves_forward() {
        let a = mono_now();
        let b = mono_now();
        assert!(a > 0 && b >= a);
        assert!(wall_now().ends_with('Z') && wall_now().len() == 30);
    }
}
