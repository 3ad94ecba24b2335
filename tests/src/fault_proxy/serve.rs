//! One client connection of the proxy: each request read whole, its fault
//! decided, forwarded on the connection's upstream connection, and the
//! answer passed back, dropped or cut.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

use super::http::Reader;
use super::{Fault, RequestKind, Service, Shared, UPSTREAM_IDLE};

/// Closes a connection with a reset (no orderly shutdown), as a failing
/// network or a crashed middlebox does.
fn reset(read: OwnedReadHalf, write: OwnedWriteHalf) {
    if let Ok(stream) = read.reunite(write) {
        // A zero linger sends the reset at once on drop; it never blocks.
        #[allow(deprecated)]
        let _ = stream.set_linger(Some(Duration::ZERO));
    }
}

struct Upstream {
    reader: Reader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    used: Instant,
}

async fn connect(addr: SocketAddr) -> io::Result<Upstream> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (read, writer) = stream.into_split();
    Ok(Upstream {
        reader: Reader::new(read),
        writer,
        used: Instant::now(),
    })
}

/// Serves one client connection: each request in turn, on one upstream connection.
pub(super) async fn serve(client: TcpStream, upstream_addr: SocketAddr, service: Service, shared: Arc<Shared>) {
    let (read, mut writer) = client.into_split();
    let mut reader = Reader::new(read);
    let mut upstream: Option<Upstream> = None;
    loop {
        let request = match reader.request().await {
            Ok(Some(request)) => request,
            _ => return,
        };
        let kind = RequestKind::classify(service, request.method(), request.target());
        let fault = shared.decide(kind);
        match fault {
            Some(Fault::ResetBeforeForward) => {
                shared.count(kind, Fault::ResetBeforeForward);
                return reset(reader.into_inner(), writer);
            }
            Some(Fault::Delay(pause)) => {
                shared.count(kind, Fault::Delay(pause));
                tokio::time::sleep(pause).await;
            }
            _ => {}
        }
        if upstream.as_ref().is_none_or(|u| u.used.elapsed() > UPSTREAM_IDLE) {
            upstream = match connect(upstream_addr).await {
                Ok(u) => Some(u),
                Err(_) => return reset(reader.into_inner(), writer),
            };
        }
        let Some(up) = upstream.as_mut() else { return };
        let answer = async {
            up.writer.write_all(&request.bytes()).await?;
            up.reader.response(request.method()).await
        }
        .await;
        let Ok(answer) = answer else {
            return reset(reader.into_inner(), writer);
        };
        up.used = Instant::now();
        match fault {
            Some(Fault::DropAnswerLate(hold)) => {
                tokio::time::sleep(hold).await;
                shared.count(kind, Fault::DropAnswer);
                return reset(reader.into_inner(), writer);
            }
            Some(Fault::DropAnswer) => {
                shared.count(kind, Fault::DropAnswer);
                return reset(reader.into_inner(), writer);
            }
            Some(Fault::CutBody) => {
                shared.count(kind, Fault::CutBody);
                let mut part = answer.head.clone();
                match answer.body.len() {
                    0 => part.truncate(answer.head.len() / 2),
                    n => part.extend_from_slice(&answer.body[..n / 2]),
                }
                let _ = writer.write_all(&part).await;
                let _ = writer.flush().await;
                return reset(reader.into_inner(), writer);
            }
            _ => {}
        }
        if writer.write_all(&answer.bytes()).await.is_err() {
            return;
        }
        if answer.close || request.close {
            let _ = writer.shutdown().await;
            return;
        }
    }
}
