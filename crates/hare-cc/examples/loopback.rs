//! A quinn client sends data to a quinn server over loopback with a hare-cc controller, and
//! prints the controllers' live telemetry: a snapshot line every 100 ms and every decision
//! (slow-start exit, window reductions, ...) as it happens, with the side that made it.
//!
//! ```text
//! cargo run -p hare-cc --example loopback -- [SPEC] [MEGABYTES]
//! cargo run -p hare-cc --example loopback -- cubic@linux-2.6.20 256
//! ```
//!
//! SPEC defaults to `cubic@linux-6`, MEGABYTES to 64. Loopback rarely loses packets: slow
//! start usually ends by HyStart (CUBIC) or not at all; try `bic@linux-2.6.20`, whose
//! `initial_ssthresh=100` ends it at 100 segments.

use std::error::Error;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hare_cc::{CcSpec, Observer};
use quinn::{Endpoint, Side};
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};

type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;
type ServerParts = (Endpoint, SocketAddr, CertificateDer<'static>);

fn main() -> std::process::ExitCode {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let result = match runtime {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loopback: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let spec: CcSpec = args.next().as_deref().unwrap_or("cubic@linux-6").parse()?;
    let megabytes: usize = match args.next() {
        Some(mb) => mb
            .parse()
            .map_err(|_| format!("MEGABYTES: not a number: `{mb}`"))?,
        None => 64,
    };
    println!(
        "controller {} ({}), {megabytes} MB over loopback",
        spec,
        spec.label()
    );

    let observer = Observer::with_settings(16, 1024);
    let (server, addr, cert) = server(&spec, observer.for_side(Side::Server))?;
    let client = client(&spec, observer.for_side(Side::Client), cert)?;
    let receiver = tokio::spawn(receive(server));
    let telemetry = tokio::spawn(print_telemetry(observer.clone()));

    let start = Instant::now();
    let connection = client.connect(addr, "localhost")?.await?;
    let mut stream = connection.open_uni().await?;
    let chunk = vec![0x5a_u8; 1 << 20];
    for _ in 0..megabytes {
        stream.write_all(&chunk).await?;
    }
    stream.finish()?;
    let received = receiver.await??;
    let elapsed = start.elapsed();
    telemetry.abort();
    print_events(&observer);

    let mbit = received as f64 * 8.0 / elapsed.as_secs_f64() / 1e6;
    println!("{received} bytes in {elapsed:.2?} ({mbit:.0} Mbit/s)");
    let sender = observer
        .controllers()
        .into_iter()
        .filter_map(|id| observer.view(id))
        .find(|view| view.side == Some(Side::Client));
    if let Some(view) = sender {
        let (id, s) = (view.id, view.snapshot);
        let exit = match (s.exit_reason, s.exit_cwnd) {
            (Some(reason), Some(cwnd)) => format!("slow start ended at cwnd {cwnd} ({reason})"),
            _ => "slow start did not end".to_owned(),
        };
        println!(
            "client controller {id}: {exit}; {} window reductions",
            s.reductions
        );
    }
    connection.close(0u32.into(), b"done");
    client.wait_idle().await;
    Ok(())
}

/// A transport configuration with the spec's controller and windows big enough that flow
/// control does not hide the congestion window on loopback.
fn transport(spec: &CcSpec, observer: Observer) -> quinn::TransportConfig {
    let mut transport = quinn::TransportConfig::default();
    transport.congestion_controller_factory(spec.factory_with_observer(observer));
    transport.stream_receive_window(quinn::VarInt::from_u32(64 << 20));
    transport.receive_window(quinn::VarInt::from_u32(128 << 20));
    transport.send_window(128 << 20);
    transport
}

/// The server endpoint, its address and its self-signed certificate.
fn server(spec: &CcSpec, observer: Observer) -> Res<ServerParts> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])?;
    let der = cert.cert.der().clone();
    let key = PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());
    let mut config = quinn::ServerConfig::with_single_cert(vec![der.clone()], key.into())?;
    config.transport_config(Arc::new(transport(spec, observer)));
    let endpoint = Endpoint::server(config, "127.0.0.1:0".parse()?)?;
    let addr = endpoint.local_addr()?;
    Ok((endpoint, addr, der))
}

/// The client endpoint, trusting the server's certificate.
fn client(spec: &CcSpec, observer: Observer, cert: CertificateDer<'static>) -> Res<Endpoint> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert)?;
    let mut config = quinn::ClientConfig::with_root_certificates(Arc::new(roots))?;
    config.transport_config(Arc::new(transport(spec, observer)));
    let mut endpoint = Endpoint::client("127.0.0.1:0".parse()?)?;
    endpoint.set_default_client_config(config);
    Ok(endpoint)
}

/// Accept one connection and read its one stream to the end; returns the bytes read.
async fn receive(endpoint: Endpoint) -> Res<usize> {
    let incoming = endpoint.accept().await.ok_or("server endpoint closed")?;
    let connection = incoming.await?;
    let mut stream = connection.accept_uni().await?;
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    while let Some(n) = stream.read(&mut buf).await? {
        total += n;
    }
    Ok(total)
}

/// Every 100 ms: the decisions published since the last tick, then the sender's (client's)
/// latest snapshot.
async fn print_telemetry(observer: Observer) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        print_events(&observer);
        for id in observer.controllers() {
            let Some(view) = observer.view(id) else {
                continue;
            };
            if view.side == Some(Side::Client) {
                let s = &view.snapshot;
                let phase = s.phase.map_or("-".to_owned(), |p| p.to_string());
                let ssthresh = s.ssthresh.map_or("inf".to_owned(), |v| v.to_string());
                println!(
                    "  client controller {id}: {phase:<22} cwnd {:>6} ssthresh {ssthresh:>6} ({} bytes)",
                    s.cwnd, s.cwnd_bytes
                );
            }
        }
    }
}

fn print_events(observer: &Observer) {
    for (id, event) in observer.drain_all() {
        let side = match observer.view(id).and_then(|v| v.side) {
            Some(Side::Client) => "client",
            Some(Side::Server) => "server",
            None => "?",
        };
        println!("  {side} controller {id}: {event}");
    }
}
