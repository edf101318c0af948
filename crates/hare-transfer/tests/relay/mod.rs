//! A UDP relay for tests: each client (by source address, numbered in the order they first
//! send) gets its own upstream socket to the target; one client can be cut off, both ways,
//! once a number of its bytes went through, as a blocked port or a dead path would.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A running relay.
pub struct Relay {
    /// Where clients send.
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

/// One client's way up and its count.
struct Client {
    up: Arc<UdpSocket>,
    bytes: Arc<AtomicU64>,
    number: usize,
}

impl Relay {
    /// Relay to `target`; with `cut = Some((n, bytes))`, client `n` is cut off once `bytes`
    /// of its datagrams (either way) went through.
    pub fn start(target: SocketAddr, cut: Option<(usize, u64)>) -> Self {
        let down = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind relay"));
        down.set_read_timeout(Some(Duration::from_millis(50)))
            .expect("timeout");
        let addr = down.local_addr().expect("addr");
        let (cut_flag, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (c, s) = (cut_flag.clone(), stop.clone());
        std::thread::spawn(move || serve(down, target, cut, (c, s)));
        Self {
            addr,
            cut: cut_flag,
            stop,
        }
    }

    /// Whether the cut happened.
    pub fn cut_happened(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Whether client `number`, now at `bytes`, is cut off.
fn is_cut(cut: Option<(usize, u64)>, number: usize, bytes: u64, flag: &AtomicBool) -> bool {
    match cut {
        Some((n, limit)) if n == number && bytes >= limit => {
            flag.store(true, Ordering::Relaxed);
            true
        }
        _ => false,
    }
}

fn serve(
    down: Arc<UdpSocket>,
    target: SocketAddr,
    cut: Option<(usize, u64)>,
    (flag, stop): (Arc<AtomicBool>, Arc<AtomicBool>),
) {
    let mut clients: HashMap<SocketAddr, Client> = HashMap::new();
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = down.recv_from(&mut buf) else {
            continue;
        };
        let number = clients.len();
        let c = clients.entry(from).or_insert_with(|| {
            let up = Arc::new(UdpSocket::bind("127.0.0.1:0").expect("bind upstream"));
            up.connect(target).expect("connect upstream");
            up.set_read_timeout(Some(Duration::from_millis(50)))
                .expect("timeout");
            let bytes = Arc::new(AtomicU64::new(0));
            let back = (up.clone(), down.clone(), bytes.clone());
            let (flag, stop) = (flag.clone(), stop.clone());
            std::thread::spawn(move || upstream(back, from, (number, cut), (flag, stop)));
            Client { up, bytes, number }
        });
        let total = c.bytes.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if !is_cut(cut, c.number, total, &flag) {
            let _ = c.up.send(&buf[..n]);
        }
    }
}

/// What comes back from the target for client `number` at `client`.
fn upstream(
    (up, down, bytes): (Arc<UdpSocket>, Arc<UdpSocket>, Arc<AtomicU64>),
    client: SocketAddr,
    (number, cut): (usize, Option<(usize, u64)>),
    (flag, stop): (Arc<AtomicBool>, Arc<AtomicBool>),
) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok(n) = up.recv(&mut buf) else {
            continue;
        };
        let total = bytes.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if !is_cut(cut, number, total, &flag) {
            let _ = down.send_to(&buf[..n], client);
        }
    }
}
