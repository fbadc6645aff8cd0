//! A TCP proxy in front of a server on 127.0.0.1, one per client, that can
//! hold a client's traffic (a partition) or slow it (a slow API), for the
//! fault scenarios on the real kube-apiserver: TLS passes through untouched
//! (the server's certificate names 127.0.0.1, whatever the port).
//!
//! - [`Mode::Pass`]: bytes go through as they come;
//! - [`Mode::Delay`]: each chunk read is held that long before it is written on,
//!   in both directions, so a request and its answer each take it once more;
//! - [`Mode::Hold`]: nothing is read or written, on every connection, old and
//!   new (new ones are accepted and connected, then held); what was read stays
//!   held and goes on when the mode changes, as TCP delivers after a partition
//!   heals, unless the client gave up and closed the connection first;
//! - [`Mode::Refuse`]: every connection is reset (RST), old and new: a
//!   partition the client sees at once;
//! - [`Mode::Deaf`]: requests go on to the server, answers are held: the
//!   server acts on a write whose answer the client never gets. Leaving this
//!   mode resets the connections it held answers on (the answers are lost,
//!   not delivered late).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forward them.
    Pass,
    /// Forward each chunk this long after it was read.
    Delay(Duration),
    /// Forward nothing until the mode changes.
    Hold,
    /// Reset every connection, and each new one at once.
    Refuse,
    /// Forward what the client sends, hold what the server answers; the
    /// connections are reset when the mode changes.
    Deaf,
}

/// A running proxy; it stops accepting and drops its connections on drop.
pub struct Proxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free port of 127.0.0.1 and forwards to `target`, on the
    /// current tokio runtime.
    ///
    /// # Errors
    ///
    /// When no port can be bound.
    pub async fn start(target: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (mode, watching) = watch::channel(Mode::Pass);
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let watching = watching.clone();
                connections.spawn(connection(client, target, watching));
            }
        });
        Ok(Proxy { addr, mode, task })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on, `mode` (also for the chunks held now).
    pub fn set(&self, mode: Mode) {
        let _ = self.mode.send(mode);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Which way a pump copies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Client to server: requests.
    Up,
    /// Server to client: answers.
    Down,
}

/// One client connection, forwarded to `target` until either side ends it or
/// the mode resets it.
async fn connection(mut client: TcpStream, target: SocketAddr, mut mode: watch::Receiver<Mode>) {
    let reset = |s: &TcpStream| {
        // Closing with a zero linger sends RST, not FIN.
        let _ = s.set_zero_linger();
    };
    if *mode.borrow_and_update() == Mode::Refuse {
        reset(&client);
        return;
    }
    let Ok(mut server) = TcpStream::connect(target).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.split();
    let (server_read, server_write) = server.split();
    let watching = mode.clone();
    // Each direction on its own; either ending ends both, and so does a reset.
    let resets = async {
        let mut was_deaf = false;
        loop {
            let now = *mode.borrow_and_update();
            if now == Mode::Refuse || (was_deaf && now != Mode::Deaf) {
                return;
            }
            was_deaf = now == Mode::Deaf;
            if mode.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    };
    let by_mode = tokio::select! {
        reset = pump(client_read, server_write, watching.clone(), Way::Up) => reset,
        reset = pump(server_read, client_write, watching, Way::Down) => reset,
        () = resets => true,
    };
    if by_mode {
        reset(&client);
        reset(&server);
    }
}

/// Copies `from` to `to` by `mode`, until either side ends (`false`) or the
/// answers it held while deaf are to be lost (`true`: reset the connection).
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    mut mode: watch::Receiver<Mode>,
    way: Way,
) -> bool {
    let deaf = |m: Mode| m == Mode::Deaf && way == Way::Down;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // Nothing is read while held: the sender's TCP window fills.
        let mut was_deaf = false;
        loop {
            let now = *mode.borrow_and_update();
            if was_deaf && !deaf(now) {
                return true;
            }
            if now != Mode::Hold && !deaf(now) {
                break;
            }
            was_deaf = deaf(now);
            if mode.changed().await.is_err() {
                return false;
            }
        }
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => n,
        };
        loop {
            let now = *mode.borrow_and_update();
            if was_deaf && !deaf(now) {
                // Read while deaf: an answer lost, never delivered late.
                return true;
            }
            match now {
                Mode::Delay(d) => {
                    tokio::time::sleep(d).await;
                    break;
                }
                Mode::Hold => {}
                m if deaf(m) => was_deaf = true,
                _ => break,
            }
            if mode.changed().await.is_err() {
                return false;
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server; returns its address.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    async fn round_trip(s: &mut TcpStream) -> Vec<u8> {
        s.write_all(b"ping").await.unwrap();
        let mut got = [0u8; 4];
        s.read_exact(&mut got).await.unwrap();
        got.to_vec()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn it_passes_delays_holds_and_delivers_what_it_held() {
        let proxy = Proxy::start(echo().await).await.unwrap();
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut s).await, b"ping");

        proxy.set(Mode::Delay(Duration::from_millis(100)));
        let started = std::time::Instant::now();
        assert_eq!(round_trip(&mut s).await, b"ping");
        // Once each way.
        assert!(
            started.elapsed() >= Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );

        proxy.set(Mode::Hold);
        s.write_all(b"held").await.unwrap();
        let mut got = [0u8; 4];
        let read = tokio::time::timeout(Duration::from_millis(300), s.read_exact(&mut got)).await;
        assert!(read.is_err(), "nothing passes while held");
        proxy.set(Mode::Pass);
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"held", "what was held goes on when healed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn it_refuses_and_loses_answers_when_deaf() {
        let proxy = Proxy::start(echo().await).await.unwrap();
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut s).await, b"ping");

        // Deaf: the request reaches the server, its answer never comes, and
        // the connection is reset when the mode changes.
        proxy.set(Mode::Deaf);
        s.write_all(b"lost").await.unwrap();
        let mut got = [0u8; 4];
        let read = tokio::time::timeout(Duration::from_millis(300), s.read_exact(&mut got)).await;
        assert!(read.is_err(), "no answer while deaf");
        proxy.set(Mode::Pass);
        let read = tokio::time::timeout(Duration::from_secs(5), s.read(&mut got)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "the connection ends when deafness ends, its answer lost: {read:?}"
        );

        // Refuse: a new connection is reset before anything passes; after
        // it, connections work again.
        let mut open = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut open).await, b"ping");
        proxy.set(Mode::Refuse);
        let read = tokio::time::timeout(Duration::from_secs(5), open.read(&mut got)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "an open connection reset: {read:?}"
        );
        // The reset may come before the connect returns.
        if let Ok(mut r) = TcpStream::connect(proxy.addr()).await {
            let _ = r.write_all(b"ping").await;
            let read = tokio::time::timeout(Duration::from_secs(5), r.read(&mut got)).await;
            assert!(matches!(read, Ok(Ok(0) | Err(_))), "refused: {read:?}");
        }
        proxy.set(Mode::Pass);
        let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut s).await, b"ping");
    }
}
