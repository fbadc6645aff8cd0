//! Log lines of every child process, read by one thread and stamped on receipt
//! on the harness's monotonic clock.
//!
//! One thread polls every pipe, reads whatever is ready, and polls again (with
//! no wait) until a pass finds nothing; only then does it stamp the lines read,
//! all with the same instant. So if a process wrote a line before another
//! process wrote its own (in real time), the first line's stamp is at most the
//! second's: the stamps lag the writes, but never swap their order across
//! processes (a per-pipe reader thread could, when the scheduler runs one reader
//! late).

use std::fs::File;
use std::io::Read;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::thread::JoinHandle;
use std::time::Instant;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

/// Whose pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Life `life` (0, then one more per restart) of the candidate in `slot`.
    Candidate {
        /// The slot.
        slot: usize,
        /// Its life.
        life: u32,
    },
    /// The `n`th kubectl command.
    Kubectl(u32),
    /// The faketime probe.
    Probe,
}

/// What the reader reports.
#[derive(Debug)]
pub enum Msg {
    /// A line (without its newline), stamped on receipt.
    Line {
        /// Whose.
        src: Source,
        /// Receipt.
        at: Instant,
        /// The text.
        text: String,
    },
    /// A pipe reached its end (every process holding it closed it).
    Eof {
        /// Whose.
        src: Source,
        /// Receipt.
        at: Instant,
    },
}

/// The reader thread: hand it pipes, receive its [`Msg`]s.
pub struct Reader {
    pipes: Option<Sender<(Source, File)>>,
    thread: Option<JoinHandle<()>>,
}

impl Reader {
    /// Starts the thread; the receiver gets every line and end.
    pub fn start() -> (Reader, Receiver<Msg>) {
        let (pipes_tx, pipes_rx) = channel();
        let (msg_tx, msg_rx) = channel();
        let thread = std::thread::Builder::new()
            .name("chaos-logs".into())
            .spawn(move || read_all(&pipes_rx, &msg_tx))
            .expect("spawn the log reader thread");
        let reader = Reader {
            pipes: Some(pipes_tx),
            thread: Some(thread),
        };
        (reader, msg_rx)
    }

    /// Reads `pipe` (a child's stdout or stderr) as `src`.
    pub fn add(&self, src: Source, pipe: impl Into<std::os::fd::OwnedFd>) {
        if let Some(tx) = &self.pipes {
            let _ = tx.send((src, File::from(pipe.into())));
        }
    }

    /// Waits (up to 3 s) for the thread to read every pipe to its end: call
    /// once every child is gone. A pipe still held open after that (by a
    /// process that escaped its group) is left to the end of the harness.
    pub fn finish(mut self) {
        self.pipes = None;
        if let Some(t) = self.thread.take() {
            let limit = Instant::now() + std::time::Duration::from_secs(3);
            while !t.is_finished() && Instant::now() < limit {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

struct Pipe {
    src: Source,
    file: File,
    pending: Vec<u8>,
    eof: bool,
}

/// Which pipes are ready, waiting up to `wait_ms`.
fn ready(pipes: &[Pipe], wait_ms: i64) -> Vec<usize> {
    let mut fds: Vec<PollFd<'_>> = pipes
        .iter()
        .map(|p| PollFd::new(&p.file, PollFlags::IN))
        .collect();
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: wait_ms * 1_000_000,
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(0) | Err(_) => Vec::new(), // an interrupted poll is retried by the caller's loop
        Ok(_) => fds
            .iter()
            .enumerate()
            .filter(|(_, fd)| !fd.revents().is_empty())
            .map(|(i, _)| i)
            .collect(),
    }
}

fn read_all(new_pipes: &Receiver<(Source, File)>, out: &Sender<Msg>) {
    let mut pipes: Vec<Pipe> = Vec::new();
    let mut closed = false;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        loop {
            match new_pipes.try_recv() {
                Ok((src, file)) => pipes.push(Pipe {
                    src,
                    file,
                    pending: Vec::new(),
                    eof: false,
                }),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        if closed && pipes.is_empty() {
            return;
        }
        let mut batch = ready(&pipes, 10);
        if batch.is_empty() {
            continue;
        }
        // Drain until a pass finds nothing more (bounded, against a child that
        // never stops writing).
        for _ in 0..64 {
            for &i in &batch {
                let p = &mut pipes[i];
                match p.file.read(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Ok(0) | Err(_) => p.eof = true,
                    Ok(n) => p.pending.extend_from_slice(&buf[..n]),
                }
            }
            // Ended pipes leave the poll set (their hang-up stays ready forever).
            let open: Vec<usize> = (0..pipes.len()).filter(|&i| !pipes[i].eof).collect();
            let again = ready_among(&pipes, &open);
            if again.is_empty() {
                break;
            }
            batch = again;
        }
        let at = Instant::now();
        for p in &mut pipes {
            while let Some(nl) = p.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = p.pending.drain(..=nl).collect();
                let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                let _ = out.send(Msg::Line {
                    src: p.src,
                    at,
                    text,
                });
            }
            if p.eof {
                if !p.pending.is_empty() {
                    let text = String::from_utf8_lossy(&p.pending).into_owned();
                    p.pending.clear();
                    let _ = out.send(Msg::Line {
                        src: p.src,
                        at,
                        text,
                    });
                }
                let _ = out.send(Msg::Eof { src: p.src, at });
            }
        }
        pipes.retain(|p| !p.eof);
    }
}

/// Which of the pipes at `open` are ready now (no wait); indices into `pipes`.
fn ready_among(pipes: &[Pipe], open: &[usize]) -> Vec<usize> {
    let mut fds: Vec<PollFd<'_>> = open
        .iter()
        .map(|&i| PollFd::new(&pipes[i].file, PollFlags::IN))
        .collect();
    match poll(&mut fds, Some(&Timespec::default())) {
        Ok(0) | Err(_) => Vec::new(),
        Ok(_) => fds
            .iter()
            .zip(open)
            .filter(|(fd, _)| !fd.revents().is_empty())
            .map(|(_, &i)| i)
            .collect(),
    }
}

/// A leadership change found in a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Started leading in this term.
    Started(String),
    /// Stopped leading in this term, for this reason.
    Stopped(String, String),
}

/// The value of `key=` on a tracing text line (quoted or not).
fn field(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!(" {key}="))? + key.len() + 2;
    let rest = &line[at..];
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted.split('"').next().map(str::to_owned);
    }
    Some(rest.split(' ').next().unwrap_or("").to_owned())
}

/// The leadership change a line reports, if any: the sidecar's monitor lines
/// (`election_ops::monitor: started leading … term=…`, `… stopped leading …
/// reason=…`) and the quick start's (`leading in term T`, `stopped leading in
/// term T`).
pub fn change(line: &str) -> Option<Change> {
    // client-go-peer: `<mono_ns> <wall> <identity> leading|stopped`; client-go
    // has no term, and says no reason.
    let words: Vec<&str> = line.split_whitespace().collect();
    if let [mono, _wall, _id, event] = words[..]
        && mono.bytes().all(|b| b.is_ascii_digit())
    {
        match event {
            "leading" => return Some(Change::Started(String::new())),
            "stopped" => return Some(Change::Stopped(String::new(), String::new())),
            _ => {}
        }
    }
    if let Some(term) = line.strip_prefix("leading in term ") {
        return Some(Change::Started(term.trim().to_owned()));
    }
    if let Some(term) = line.strip_prefix("stopped leading in term ") {
        return Some(Change::Stopped(term.trim().to_owned(), String::new()));
    }
    if line.contains("election_ops::monitor: started leading ") {
        return Some(Change::Started(field(line, "term").unwrap_or_default()));
    }
    if line.contains("election_ops::monitor: stopped leading ") {
        // The reason is the last field and may hold spaces.
        let reason = line
            .find(" reason=")
            .map(|i| line[i + 8..].to_owned())
            .unwrap_or_default();
        return Some(Change::Stopped(
            field(line, "term").unwrap_or_default(),
            reason,
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leadership_lines_of_both_libraries_are_read() {
        let go = "123456789 2026-11-29T07:00:00.000000000Z client-go-4 leading";
        assert!(matches!(change(go), Some(Change::Started(t)) if t.is_empty()));
        let go = "123456790 2026-11-29T07:00:01.000000000Z client-go-4 stopped";
        assert!(matches!(change(go), Some(Change::Stopped(..))));
        // Its other events are not leadership.
        let go = "123456791 2026-11-29T07:00:01.000000000Z client-go-4 leader cand-0";
        assert!(change(go).is_none());
        assert!(change("123 x y tick").is_none());
        assert!(matches!(change("leading in term 7"), Some(Change::Started(t)) if t == "7"));
    }
}
