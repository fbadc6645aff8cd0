//! Starting the emulator without a caller's tokio runtime.

use std::future::Future;
use std::io::{Read, Write};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use kube_emulator::{Emulator, Error, Resource};

fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer raw\r\nConnection: close\r\n\r\n").expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    answer
}

#[test]
fn start_blocking_serves_from_its_own_thread() {
    let emu = Emulator::start_blocking().expect("start on its own thread");
    let answer = http_get(emu.addr, "/version");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"major\":\"1\""), "{answer}");
    let missing = http_get(emu.addr, "/api/v1/namespaces/default/configmaps/none");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    assert!(
        missing.contains(r#""message":"configmaps \"none\" not found""#),
        "{missing}"
    );
    assert_eq!(
        emu.request_counts()
            .get("raw", kube_emulator::Verb::Get, Resource::ConfigMap),
        1
    );
    let addr = emu.addr;
    drop(emu);
    // Once dropped, the port is closed.
    let mut refused = false;
    for _ in 0..50 {
        if std::net::TcpStream::connect(addr).is_err() {
            refused = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(refused, "the listener closes when the emulator is dropped");
}

#[test]
fn start_outside_a_runtime_is_a_typed_error() {
    let mut fut = pin!(Emulator::start());
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(Err(Error::NoRuntime)) => {}
        Poll::Ready(other) => panic!("expected NoRuntime, got {other:?}"),
        Poll::Pending => panic!("expected an immediate NoRuntime error"),
    }
}
