//! Connection limits over a real socket: a client that never finishes its
//! request is cut off after the header-read timeout, a kept-alive
//! connection after the idle timeout, a body that never completes is
//! answered 408 after the body-read timeout, at the connection limit a new
//! connection takes the place of the longest idle one (so a flood of idle
//! sockets cannot shut a client out) and is closed only when every
//! connection is serving a request, and the server keeps answering. One
//! tenant cannot hold every connection (a request past its share of
//! requests in flight is answered 429 before its body), one address cannot
//! open them all, and health checks keep places of their own.

mod common;

use std::time::{Duration, Instant};

use common::{Fixture, TOKEN_A};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weft_server::ConnLimits;

async fn start(limits: ConnLimits) -> (std::net::SocketAddr, Fixture) {
    let f = Fixture::new().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(weft_server::serve_with_shutdown(
        listener,
        f.state.clone().with_conn_limits(limits),
        std::future::pending(),
    ));
    (addr, f)
}

/// Sends a whole health request on `stream` and returns the response head.
async fn health(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Waits (at most 5 s) until a new connection's health check is answered
/// again: a place was freed.
async fn served_again(addr: std::net::SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = TcpStream::connect(addr).await.unwrap();
        let _ = again
            .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
            .await;
        let mut buf = vec![0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(1), again.read(&mut buf))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(0);
        if String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(Instant::now() < deadline, "no place was freed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads until the server closes `stream`; returns how long that took.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(limit, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn a_request_line_that_never_ends_is_cut_off() {
    let (addr, _f) = start(ConnLimits {
        header_read_timeout: Duration::from_millis(300),
        ..ConnLimits::default()
    })
    .await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /heal").await.unwrap();
    let took = closed_within(&mut slow, Duration::from_secs(5))
        .await
        .expect("the server closes a connection whose headers never end");
    assert!(took >= Duration::from_millis(250), "closed after {took:?}");
    // Another client is served all along.
    let mut ok = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut ok).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn at_the_limit_a_new_connection_takes_the_place_of_the_longest_idle() {
    let (addr, _f) = start(ConnLimits {
        max_connections: 2,
        ..ConnLimits::default()
    })
    .await;
    let mut first = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut first).await.starts_with("HTTP/1.1 200"));
    let mut second = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut second).await.starts_with("HTTP/1.1 200"));
    // Both idle now: a third is served, and the first (idle longest) goes.
    let mut third = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut third).await.starts_with("HTTP/1.1 200"));
    assert!(
        closed_within(&mut first, Duration::from_secs(5))
            .await
            .is_some(),
        "the connection idle longest is closed"
    );
    assert!(health(&mut second).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn a_flood_of_idle_connections_does_not_shut_out_a_client() {
    let (addr, _f) = start(ConnLimits {
        max_connections: 16,
        ..ConnLimits::default()
    })
    .await;
    // Four times the limit of sockets that never send a byte, as a flood
    // that renews its connections would hold.
    let mut flood = Vec::new();
    for _ in 0..64 {
        flood.push(TcpStream::connect(addr).await.unwrap());
    }
    for _ in 0..3 {
        let mut client = TcpStream::connect(addr).await.unwrap();
        assert!(health(&mut client).await.starts_with("HTTP/1.1 200"));
    }
    drop(flood);
}

#[tokio::test]
async fn when_every_connection_is_serving_a_request_a_new_one_is_closed() {
    let (addr, _f) = start(ConnLimits {
        max_connections: 2,
        reserved_connections: 0,
        ..ConnLimits::default()
    })
    .await;
    // Two requests whose bodies are still on their way: both busy. The
    // server asks for the body (100 Continue) once the request is being
    // served, which tells the test it is.
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN_A}\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\
         expect: 100-continue\r\n\r\n"
    );
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        let mut buf = [0u8; 256];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("the server asks for the body")
            .unwrap();
        let answer = String::from_utf8_lossy(&buf[..n]);
        assert!(answer.starts_with("HTTP/1.1 100"), "{answer}");
        busy.push(s);
    }
    let mut third = TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_within(&mut third, Duration::from_secs(5))
            .await
            .is_some(),
        "the third connection is closed"
    );
    // Ending one request frees its place.
    drop(busy.remove(0));
    served_again(addr).await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let (addr, _f) = start(ConnLimits {
        header_read_timeout: Duration::from_millis(200),
        idle_timeout: Duration::from_millis(1200),
        ..ConnLimits::default()
    })
    .await;
    let mut kept = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut kept).await.starts_with("HTTP/1.1 200"));
    // Idle for longer than the header-read timeout: still open, and it
    // serves another request.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(health(&mut kept).await.starts_with("HTTP/1.1 200"));
    let took = closed_within(&mut kept, Duration::from_secs(5))
        .await
        .expect("the server closes an idle connection");
    assert!(
        took >= Duration::from_millis(1100) && took < Duration::from_millis(3000),
        "closed after {took:?}"
    );
    // A connection that never sends a byte gets the header-read timeout.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let took = closed_within(&mut silent, Duration::from_secs(5))
        .await
        .expect("the server closes a silent connection");
    assert!(took < Duration::from_millis(1000), "closed after {took:?}");
}

#[tokio::test]
async fn a_body_that_never_completes_is_answered_408_after_the_body_read_timeout() {
    let (addr, _f) = start(ConnLimits {
        body_read_timeout: Duration::from_millis(400),
        ..ConnLimits::default()
    })
    .await;
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {TOKEN_A}\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"agent\""
    );
    let started = Instant::now();
    slow.write_all(head.as_bytes()).await.unwrap();
    // A byte now and then: the client is slow, not silent.
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&answer).contains("\r\n\r\n") {
        tokio::select! {
            n = slow.read(&mut buf) => match n {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            },
            () = tokio::time::sleep(Duration::from_millis(100)) => {
                let _ = slow.write_all(b" ").await;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no answer in 5 s"
        );
    }
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        took >= Duration::from_millis(350),
        "answered after {took:?}"
    );
    // Other clients are served all along.
    let mut ok = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut ok).await.starts_with("HTTP/1.1 200"));
}

/// Opens a request from `token` whose body never comes, and waits until the
/// server serves it (asks for the body); returns the connection, or the
/// head of the answer the server gave instead.
async fn slow_body(addr: std::net::SocketAddr, token: &str) -> Result<TcpStream, String> {
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\
         expect: 100-continue\r\n\r\n"
    );
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("an answer")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]).into_owned();
    if answer.starts_with("HTTP/1.1 100") {
        Ok(s)
    } else {
        Err(answer)
    }
}

#[tokio::test]
async fn a_tenant_past_its_share_of_requests_is_answered_429_and_others_are_served() {
    let (addr, _f) = start(ConnLimits {
        max_connections: 8,
        max_requests_per_tenant: 3,
        ..ConnLimits::default()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(slow_body(addr, TOKEN_A).await.expect("within the share"));
    }
    // The fourth is refused at once, before its body.
    let refused = slow_body(addr, TOKEN_A).await.expect_err("past the share");
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains("retry-after"),
        "{refused}"
    );
    // Another tenant, and health checks, are served meanwhile.
    let other = slow_body(addr, common::TOKEN_B).await;
    assert!(other.is_ok(), "{:?}", other.err());
    let mut probe = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut probe).await.starts_with("HTTP/1.1 200"));
    // A request that ends gives its place back.
    drop(held.remove(0));
    let deadline = Instant::now() + Duration::from_secs(5);
    while slow_body(addr, TOKEN_A).await.is_err() {
        assert!(Instant::now() < deadline, "the share was never given back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn health_checks_are_answered_when_every_connection_is_busy() {
    let (addr, _f) = start(ConnLimits {
        max_connections: 2,
        reserved_connections: 1,
        ..ConnLimits::default()
    })
    .await;
    let _busy = [
        slow_body(addr, TOKEN_A).await.expect("served"),
        slow_body(addr, common::TOKEN_B).await.expect("served"),
    ];
    // Every place is busy: a probe still gets its answer...
    let mut probe = TcpStream::connect(addr).await.unwrap();
    assert!(health(&mut probe).await.starts_with("HTTP/1.1 200"));
    drop(probe);
    // ...and any other request on a probe's place is answered 503.
    let mut other = TcpStream::connect(addr).await.unwrap();
    other
        .write_all(b"GET /v1/runs HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 1024];
    let deadline = Instant::now() + Duration::from_secs(5);
    let answer = loop {
        let n = tokio::time::timeout(Duration::from_secs(5), other.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap_or(0);
        if n > 0 || Instant::now() > deadline {
            break String::from_utf8_lossy(&buf[..n]).into_owned();
        }
        // The probe's place was still being given back: try again.
        other = TcpStream::connect(addr).await.unwrap();
        other
            .write_all(b"GET /v1/runs HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
    };
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
}

#[tokio::test]
async fn one_address_cannot_open_every_connection() {
    let (addr, _f) = start(ConnLimits {
        max_connections: 16,
        max_connections_per_peer: 4,
        ..ConnLimits::default()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        assert!(health(&mut s).await.starts_with("HTTP/1.1 200"));
        held.push(s);
    }
    let mut fifth = TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_within(&mut fifth, Duration::from_secs(5))
            .await
            .is_some(),
        "the address's fifth connection is closed"
    );
    drop(held.remove(0));
    served_again(addr).await;
}
