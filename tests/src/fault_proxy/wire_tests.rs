//! The proxy against a scripted upstream: framing kept across keep-alive
//! requests, and what the client and the upstream see of each fault.

use super::http::Reader;
use super::*;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// An upstream answering `/len` with a `Content-Length` body and anything
/// else with a chunked one, keeping connections open; counts requests.
async fn upstream() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = counter.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut reader = Reader::new(read);
                while let Ok(Some(req)) = reader.request().await {
                    seen.fetch_add(1, Ordering::SeqCst);
                    let body = format!("{}:{}", req.target(), String::from_utf8_lossy(&req.body));
                    let answer = if req.target() == "/len" {
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len())
                    } else {
                        format!(
                            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
                            body.len()
                        )
                    };
                    if write.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

async fn proxy_to(addr: SocketAddr) -> FaultProxy {
    let connection = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={};TableEndpoint=http://{addr}/devstoreaccount1;BlobEndpoint=http://{addr}/devstoreaccount1;",
        unified_tables::backend::azure::EMULATOR_ACCOUNT_KEY
    );
    FaultProxy::start(&connection, 3).await.unwrap()
}

async fn send(stream: &mut TcpStream, target: &str, body: &str) {
    let request = format!(
        "PUT {target} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
}

#[tokio::test]
async fn keep_alive_requests_pass_with_their_framing_and_each_fault_does_what_it_says() {
    let (addr, seen) = upstream().await;
    let proxy = proxy_to(addr).await;
    assert!(proxy
        .connection_string()
        .contains(&format!("TableEndpoint=http://{}/devstoreaccount1", proxy.table_addr())));
    // Three requests on one connection, both framings.
    let mut client = TcpStream::connect(proxy.table_addr()).await.unwrap();
    for (target, expect) in [("/len", "/len:a"), ("/chunked", "/chunked:bb"), ("/len", "/len:ccc")] {
        let body = &expect[expect.find(':').unwrap() + 1..];
        send(&mut client, target, body).await;
        let (read, write) = client.into_split();
        let mut reader = Reader::new(read);
        let answer = reader.response("PUT").await.unwrap();
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        assert!(text.contains(expect), "{target}: {text}");
        client = reader.into_inner().reunite(write).unwrap();
    }
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    assert_eq!(proxy.counts().requests, 3);

    // A dropped answer: the upstream saw the request, the client saw nothing.
    proxy.fault_next(Kinds::ALL, Fault::DropAnswer, 1);
    send(&mut client, "/len", "x").await;
    let mut reader = Reader::new(client);
    assert!(reader.response("PUT").await.is_err(), "no answer");
    assert_eq!(seen.load(Ordering::SeqCst), 4, "but applied");

    // A reset before forwarding: the upstream never saw it.
    proxy.fault_next(Kinds::ALL, Fault::ResetBeforeForward, 1);
    let mut client = TcpStream::connect(proxy.table_addr()).await.unwrap();
    send(&mut client, "/len", "y").await;
    assert!(Reader::new(client).response("PUT").await.is_err());
    assert_eq!(seen.load(Ordering::SeqCst), 4, "not forwarded");

    // A body cut halfway: the head and part of the body, then the end.
    proxy.fault_next(Kinds::ALL, Fault::CutBody, 1);
    let mut client = TcpStream::connect(proxy.table_addr()).await.unwrap();
    send(&mut client, "/len", "0123456789").await;
    let err = Reader::new(client).response("PUT").await.unwrap_err();
    assert!(
        err.kind() == io::ErrorKind::UnexpectedEof || err.kind() == io::ErrorKind::ConnectionReset,
        "{err}"
    );

    // A delay: answered, late.
    proxy.fault_next(Kinds::ALL, Fault::Delay(Duration::from_millis(300)), 1);
    let mut client = TcpStream::connect(proxy.table_addr()).await.unwrap();
    let started = Instant::now();
    send(&mut client, "/chunked", "z").await;
    assert_eq!(Reader::new(client).response("PUT").await.unwrap().status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(300));

    let counts = proxy.counts();
    assert_eq!(
        (
            counts.dropped_answers,
            counts.dropped_write_answers,
            counts.resets,
            counts.cut_bodies,
            counts.delayed
        ),
        (1, 1, 1, 1, 1),
        "{counts:?}"
    );
    assert_eq!(counts.faults(), 4);
    assert_eq!(proxy.pending(), 0);
}
