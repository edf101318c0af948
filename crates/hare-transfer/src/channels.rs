//! Control and data channels over QUIC streams or kernel TCP connections, behind one shape so
//! that the job logic is written once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;

use crate::error::{Result, TransferError};
use crate::protocol::DataHeader;
pub(crate) use crate::protocol::TCP_CONTROL_MAGIC;

/// Size of one write on a data channel: the sender writes at most this much at a time
/// (iperf3 JSON states it as `blksize`).
pub(crate) const CHUNK: usize = 256 << 10;
/// Read size of TCP data connections.
const TCP_READ: usize = 256 << 10;

/// The reading half of a control channel.
pub type ControlRead = Box<dyn AsyncRead + Unpin + Send>;
/// The writing half of a control channel.
pub type ControlWrite = Box<dyn AsyncWrite + Unpin + Send>;

/// The sending end of a data channel.
#[derive(Debug)]
pub enum DataOut {
    /// A QUIC unidirectional stream.
    Quic(quinn::SendStream),
    /// A TCP connection (shared so that `TCP_INFO` can be sampled while it is written).
    Tcp(TcpDataSocket),
}

/// A sender's TCP data connection as its sampler sees it: the socket, and the `TCP_INFO`
/// read just before a timed job ended it with an RST.
///
/// After the RST (`tcp_disconnect()`) `TCP_INFO` reads zeros, so without the last reading the
/// data acknowledged between the sampler's previous look and the end would be missing from the
/// last interval line.
#[derive(Debug, Clone)]
pub struct TcpDataSocket {
    /// The connection.
    pub stream: Arc<TcpStream>,
    at_abort: Arc<std::sync::Mutex<Option<crate::tcp::TcpInfo>>>,
}

impl TcpDataSocket {
    /// A connection not yet aborted.
    pub fn new(stream: TcpStream) -> Self {
        TcpDataSocket {
            stream: Arc::new(stream),
            at_abort: Arc::default(),
        }
    }

    /// The `TCP_INFO` of the connection now, or the one read just before it was aborted.
    pub fn info(&self) -> std::io::Result<crate::tcp::TcpInfo> {
        let kept = *self.at_abort.lock().unwrap_or_else(|p| p.into_inner());
        match kept {
            Some(info) => Ok(info),
            None => crate::tcp::tcp_info(&*self.stream),
        }
    }

    /// Keep the last `TCP_INFO`, then end the connection with an RST (`tcp::abort`).
    fn abort(&self) {
        if let Ok(info) = crate::tcp::tcp_info(&*self.stream) {
            *self.at_abort.lock().unwrap_or_else(|p| p.into_inner()) = Some(info);
        }
        if crate::tcp::abort(&*self.stream).is_err() {
            let _ = socket2::SockRef::from(&*self.stream).shutdown(std::net::Shutdown::Both);
        }
    }
}

impl DataOut {
    /// Write all of `b`.
    pub async fn write(&mut self, b: Bytes) -> Result<()> {
        self.write_counted(b, None).await
    }

    /// Write all of `b`, adding to `written` each piece the transport takes as it takes it.
    /// Cancelled at any await (a timed job's time is up), `written` holds exactly what was
    /// handed over: each QUIC `write_chunks` and each TCP `try_write` either happened or did
    /// not (quinn's `write_chunk` is not cancel-safe: part of a chunk could be taken and not
    /// counted, and then more bytes arrived than were counted as written).
    pub async fn write_counted(&mut self, b: Bytes, written: Option<&AtomicU64>) -> Result<()> {
        let count = |n: usize| {
            if let Some(w) = written {
                w.fetch_add(n as u64, Ordering::Relaxed);
            }
        };
        match self {
            DataOut::Quic(s) => {
                let mut bufs = [b];
                while !bufs[0].is_empty() {
                    let w = s
                        .write_chunks(&mut bufs)
                        .await
                        .map_err(|e| TransferError::Connection(format!("writing a stream: {e}")))?;
                    count(w.bytes);
                }
                Ok(())
            }
            DataOut::Tcp(TcpDataSocket { stream: s, .. }) => {
                let mut buf = &b[..];
                while !buf.is_empty() {
                    let broken = |cause| TransferError::Broken {
                        what: "TCP write".into(),
                        cause,
                    };
                    s.writable().await.map_err(broken)?;
                    match s.try_write(buf) {
                        Ok(n) => {
                            count(n);
                            buf = &buf[n..];
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(broken(e)),
                    }
                }
                Ok(())
            }
        }
    }

    /// End the channel cleanly (all data written will be delivered).
    pub fn finish(&mut self) -> Result<()> {
        match self {
            DataOut::Quic(s) => s
                .finish()
                .map_err(|e| TransferError::Connection(format!("finishing a stream: {e}"))),
            DataOut::Tcp(s) => socket2::SockRef::from(&*s.stream)
                .shutdown(std::net::Shutdown::Write)
                .map_err(|e| TransferError::Connection(format!("TCP shutdown: {e}"))),
        }
    }

    /// Stop at once and discard everything still queued (a timed job whose time is up): a QUIC
    /// `RESET_STREAM` with `code`, or a TCP RST (`tcp::abort`).
    pub fn discard(&mut self, code: u32) {
        match self {
            DataOut::Quic(s) => {
                let _ = s.reset(quinn::VarInt::from_u32(code));
            }
            DataOut::Tcp(s) => s.abort(),
        }
    }

    /// Abandon the channel.
    pub fn reset(&mut self, code: u32) {
        match self {
            DataOut::Quic(s) => {
                let _ = s.reset(quinn::VarInt::from_u32(code));
            }
            DataOut::Tcp(s) => {
                let _ = socket2::SockRef::from(&*s.stream).shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// The receiving end of a data channel, after its header was read.
#[derive(Debug)]
pub enum DataIn {
    /// A QUIC unidirectional stream, read unordered, the number of the job's connection it
    /// came on (0: the job's own; `-C` adds 1, 2, ...) and that connection.
    Quic(quinn::RecvStream, u16, quinn::Connection),
    /// A TCP connection and the payload offset of the next byte.
    Tcp(TcpStream, u64),
}

impl DataIn {
    /// The number of the job's connection the channel came on (0 over kernel TCP).
    pub fn connection(&self) -> u16 {
        match self {
            DataIn::Quic(_, n, _) => *n,
            DataIn::Tcp(..) => 0,
        }
    }

    /// The channel's QUIC connection was lost to the path (a timeout or a reset, not closed
    /// by either side): a job over several connections may continue what it carried on
    /// another.
    pub fn connection_lost_to_path(&self) -> bool {
        match self {
            DataIn::Quic(_, _, c) => crate::peer_gone::lost_to_path(c),
            DataIn::Tcp(..) => false,
        }
    }

    /// The next piece of payload and its offset from the payload start; `None` at the end.
    pub async fn next(&mut self) -> Result<Option<(u64, Bytes)>> {
        self.read(false).await
    }

    /// [`DataIn::next`] for a bulk stream: a stream the sender reset because its time was up
    /// (`-T`) ends there, even when the reset outruns this side's own clock of the job's
    /// time.
    pub(crate) async fn next_bulk(&mut self) -> Result<Option<(u64, Bytes)>> {
        self.read(true).await
    }

    async fn read(&mut self, time_up_ends: bool) -> Result<Option<(u64, Bytes)>> {
        match self {
            DataIn::Quic(s, _, _) => match s.read_chunk(usize::MAX, false).await {
                Ok(Some(c)) => {
                    let off = c
                        .offset
                        .checked_sub(DataHeader::LEN as u64)
                        .ok_or_else(|| {
                            TransferError::Protocol("stream data overlaps its header".into())
                        })?;
                    Ok(Some((off, c.bytes)))
                }
                Ok(None) => Ok(None),
                Err(quinn::ReadError::Reset(code))
                    if time_up_ends
                        && code == quinn::VarInt::from_u32(crate::protocol::close::TIME_UP) =>
                {
                    Ok(None)
                }
                // Only the receiver reads data streams: a lost connection is a sender gone.
                Err(e) => Err(TransferError::Connection(
                    crate::peer_gone::of_read_error(&e)
                        .unwrap_or_else(|| format!("reading a stream: {e}")),
                )),
            },
            DataIn::Tcp(s, pos) => {
                let mut buf = BytesMut::with_capacity(TCP_READ);
                let n = s.read_buf(&mut buf).await.map_err(|e| {
                    TransferError::Connection(
                        crate::peer_gone::words(&e).unwrap_or_else(|| format!("TCP read: {e}")),
                    )
                })?;
                if n == 0 {
                    return Ok(None);
                }
                let off = *pos;
                *pos += n as u64;
                Ok(Some((off, buf.freeze())))
            }
        }
    }
}

/// Read a data channel's header from a QUIC stream (in order; the payload is then read
/// unordered).
pub async fn read_quic_header(s: &mut quinn::RecvStream) -> Result<DataHeader> {
    let mut b = [0u8; DataHeader::LEN];
    s.read_exact(&mut b)
        .await
        .map_err(|e| TransferError::Protocol(format!("reading a data stream header: {e}")))?;
    DataHeader::decode(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Write one chunk far larger than the peer takes while it does not read, cut the write
    /// short (as a timed job's deadline does), end the channel, and return what the write
    /// counted and what the peer then read in all.
    async fn cut_short(
        mut out: DataOut,
        read_all: impl std::future::Future<Output = u64>,
    ) -> (u64, u64) {
        let written = AtomicU64::new(0);
        let big = Bytes::from(vec![7u8; 32 << 20]);
        let cut = tokio::time::timeout(
            Duration::from_millis(300),
            out.write_counted(big, Some(&written)),
        )
        .await;
        assert!(cut.is_err(), "the peer took 32 MiB without reading");
        out.finish().expect("finish");
        let got = read_all.await;
        (written.load(Ordering::Relaxed), got)
    }

    #[tokio::test]
    async fn a_tcp_write_cut_short_counts_exactly_what_the_peer_gets() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = l.local_addr().expect("addr");
        let (client, server) = tokio::join!(TcpStream::connect(addr), l.accept());
        let out = DataOut::Tcp(TcpDataSocket::new(client.expect("connect")));
        let (mut peer, _) = server.expect("accept");
        let read_all = async move {
            let mut sink = Vec::new();
            peer.read_to_end(&mut sink).await.expect("read") as u64
        };
        let (written, got) = cut_short(out, read_all).await;
        assert!(written > 0 && written < 32 << 20, "{written}");
        assert_eq!(written, got);
    }

    #[tokio::test]
    async fn a_quic_write_cut_short_counts_exactly_what_the_peer_gets() {
        let id = crate::identity::ephemeral(&[]).expect("identity");
        let crypto = crate::trust::server_crypto(&id).expect("server crypto");
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(crypto).expect("quic");
        let mut sc = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let mut t = quinn::TransportConfig::default();
        // A small window: the writer waits for credit the peer gives only as it reads.
        t.stream_receive_window(quinn::VarInt::from_u32(256 << 10));
        sc.transport_config(Arc::new(t));
        let any = "127.0.0.1:0".parse().expect("addr");
        let server = quinn::Endpoint::server(sc, any).expect("server");
        let trust = crate::trust::Trust::Pin(id.fingerprint);
        let (crypto, _) = crate::trust::client_crypto_as(&trust, Some(&id)).expect("client");
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(crypto).expect("quic");
        let mut client = quinn::Endpoint::client(any).expect("client");
        client.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let to = server.local_addr().expect("addr");
        let connecting = client.connect(to, "localhost").expect("connect");
        let accepting = async { server.accept().await.expect("incoming").await };
        let (conn, peer) = tokio::join!(connecting, accepting);
        let (conn, peer) = (conn.expect("client side"), peer.expect("server side"));
        let out = DataOut::Quic(conn.open_uni().await.expect("stream"));
        let read_all = async move {
            let mut s = peer.accept_uni().await.expect("accept");
            let mut n = 0u64;
            while let Some(c) = s.read_chunk(usize::MAX, true).await.expect("read") {
                n += c.bytes.len() as u64;
            }
            n
        };
        let (written, got) = cut_short(out, read_all).await;
        assert!(written > 0 && written < 32 << 20, "{written}");
        assert_eq!(written, got);
    }
}
