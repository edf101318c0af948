//! quinn-proto endpoint, TLS and transport configuration of both simulated endpoints.

use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn_proto::congestion::ControllerFactory;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    AckFrequencyConfig, ClientConfig, EndpointConfig, ServerConfig, TransportConfig,
    ValidationTokenConfig, VarInt,
};

use crate::config::SimConfig;
use crate::crypto::{CryptoMode, NullClientConfig, NullServerConfig};
use crate::error::SimError;
use crate::identity::{cid_factory, derive, initial_dcid_provider, Identity, SERVER_NAME};
use crate::receiver_acks::ReceiverAcks;

/// Largest UDP payload quinn accepts (`EndpointConfig::max_udp_payload_size`).
const MAX_UDP_PAYLOAD: u16 = 65_527;

/// Checks the settings quinn would reject or that make no sense, naming the field.
pub(crate) fn validate(cfg: &SimConfig) -> Result<(), SimError> {
    let bad = |field: &'static str, value: String, expected: &str| SimError::Setting {
        field,
        value,
        expected: expected.to_string(),
    };
    if !(1200..=MAX_UDP_PAYLOAD).contains(&cfg.mtu) {
        return Err(bad(
            "mtu",
            cfg.mtu.to_string(),
            "a UDP payload size in 1200..=65527 bytes (QUIC needs 1200, RFC 9000 section 14)",
        ));
    }
    if cfg.ip_overhead > 128 {
        return Err(bad(
            "ip_overhead",
            cfg.ip_overhead.to_string(),
            "IP + UDP header bytes, 0..=128 (28 for IPv4, 48 for IPv6)",
        ));
    }
    if cfg.sender_line_rate == Some(0) {
        return Err(bad(
            "sender_line_rate",
            "0 bit/s".into(),
            "a rate above 0 bit/s, or none",
        ));
    }
    let max_var = (1u64 << 62) - 1;
    for (field, v) in [
        ("windows.stream_receive", cfg.windows.stream_receive),
        ("windows.receive", cfg.windows.receive),
        ("windows.send", cfg.windows.send),
    ] {
        if v == 0 || v > max_var {
            return Err(bad(field, v.to_string(), "a window of 1..=2^62-1 bytes"));
        }
    }
    match cfg.workload {
        crate::Workload::Bytes(0) => {
            return Err(bad("workload", "0 bytes".into(), "at least 1 byte"));
        }
        crate::Workload::Duration(d) if d.is_zero() => {
            return Err(bad("workload", "0 s".into(), "a duration above 0"));
        }
        _ => {}
    }
    let min_interval = Duration::from_millis(1);
    if cfg.interval < min_interval {
        return Err(bad(
            "interval",
            format!("{:?}", cfg.interval),
            "at least 1 ms",
        ));
    }
    if let Some(f) = cfg.fine_interval {
        if f < min_interval {
            return Err(bad("fine_interval", format!("{f:?}"), "at least 1 ms"));
        }
    }
    if cfg.gso_segments == 0 || cfg.gso_segments > 64 {
        return Err(bad(
            "gso_segments",
            cfg.gso_segments.to_string(),
            "1..=64 datagrams per transmit",
        ));
    }
    if cfg.limits.stall_after.is_zero() {
        return Err(bad(
            "limits.stall_after",
            "0 s".into(),
            "a duration above 0",
        ));
    }
    if let Some(t) = cfg.ack.time_threshold {
        if !(t.is_finite() && t >= 1.0) {
            return Err(bad("ack.time_threshold", t.to_string(), "a factor >= 1.0"));
        }
    }
    if cfg.receiver_acks == ReceiverAcks::Linux26 {
        if cfg.crypto != CryptoMode::Null {
            return Err(bad(
                "receiver_acks",
                "linux-2.6".into(),
                "the null 1-RTT cipher (the model reads the receiver's ACK frames)",
            ));
        }
        if cfg.ack.ack_eliciting_threshold.is_some_and(|v| v != 0) {
            return Err(bad(
                "ack.ack_eliciting_threshold",
                format!("{:?}", cfg.ack.ack_eliciting_threshold),
                "unset or 0 with the linux-2.6 receiver (it thins per-packet ACKs)",
            ));
        }
    }
    if cfg.ack.packet_threshold == Some(0) {
        return Err(bad("ack.packet_threshold", "0".into(), "at least 1 packet"));
    }
    for (field, v) in [
        (
            "ack.ack_eliciting_threshold",
            cfg.ack.ack_eliciting_threshold,
        ),
        ("ack.reordering_threshold", cfg.ack.reordering_threshold),
    ] {
        if let Some(v) = v {
            if v > max_var {
                return Err(bad(field, v.to_string(), "at most 2^62-1"));
            }
        }
    }
    Ok(())
}

/// The transport parameters of one side.
pub(crate) fn transport_config(
    cfg: &SimConfig,
    factory: Arc<dyn ControllerFactory + Send + Sync>,
    is_client: bool,
) -> Result<TransportConfig, SimError> {
    let var = |field: &'static str, v: u64| {
        VarInt::from_u64(v).map_err(|_| SimError::Setting {
            field,
            value: v.to_string(),
            expected: "at most 2^62-1".to_string(),
        })
    };
    let mut t = TransportConfig::default();
    t.stream_receive_window(var("windows.stream_receive", cfg.windows.stream_receive)?)
        .receive_window(var("windows.receive", cfg.windows.receive)?)
        .send_window(cfg.windows.send)
        // A fixed datagram size from the first packet: initial = minimum = the configured
        // MTU, no discovery. With min_mtu equal to it, black-hole detection cannot lower it
        // either (a burst of queue drops would otherwise look like a black hole).
        .initial_mtu(cfg.mtu)
        .min_mtu(cfg.mtu)
        .mtu_discovery_config(None)
        .keep_alive_interval(None)
        .enable_segmentation_offload(cfg.gso_segments > 1)
        .congestion_controller_factory(factory);
    if let Some(rtt) = cfg.initial_rtt {
        t.initial_rtt(rtt);
    }
    if is_client {
        let mut ack = cfg.ack;
        if cfg.receiver_acks == ReceiverAcks::Linux26 {
            // Every packet ACKed at once, any reordering at once (as a kernel receiver's
            // out-of-order queue does); the engine thins the pure ACKs to the 2.6 pattern.
            ack.ack_eliciting_threshold = Some(0);
            ack.reordering_threshold.get_or_insert(1);
        }
        if ack.uses_ack_frequency() {
            let mut af = AckFrequencyConfig::default();
            if let Some(v) = ack.ack_eliciting_threshold {
                af.ack_eliciting_threshold(var("ack.ack_eliciting_threshold", v)?);
            }
            if let Some(v) = ack.reordering_threshold {
                af.reordering_threshold(var("ack.reordering_threshold", v)?);
            }
            af.max_ack_delay(cfg.ack.max_ack_delay);
            t.ack_frequency_config(Some(af));
        }
        if let Some(p) = cfg.ack.packet_threshold {
            t.packet_threshold(p);
        }
        if let Some(f) = cfg.ack.time_threshold {
            t.time_threshold(f);
        }
    }
    Ok(t)
}

/// Endpoint configuration: seeded reset key and connection ids, the MTU as the largest UDP
/// payload accepted.
pub(crate) fn endpoint_config(
    cfg: &SimConfig,
    label: &'static str,
) -> Result<EndpointConfig, SimError> {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &derive(cfg.seed, label));
    let mut e = EndpointConfig::new(Arc::new(key));
    e.max_udp_payload_size(cfg.mtu)
        .map_err(|err| SimError::Setup(format!("max_udp_payload_size {}: {err}", cfg.mtu)))?;
    e.cid_generator(cid_factory(cfg.seed, label));
    // Greasing the QUIC bit draws from the endpoint RNG (seeded), harmless; kept as quinn's
    // default so packets look like the real binaries'.
    Ok(e)
}

/// Client and server configurations sharing one TLS identity, with the 1-RTT protection
/// `cfg.crypto` asks for.
///
/// The rustls configurations are built here the way quinn-proto 0.11's
/// `ClientConfig::with_root_certificates` and `ServerConfig::with_single_cert` build theirs
/// (ring provider, TLS 1.3 only, early data enabled on the client and `u32::MAX` on the
/// server), so that the handshake's bytes are the same, and so that their quinn wrappers can
/// be wrapped once more for the null cipher.
pub(crate) fn tls_configs(
    cfg: &SimConfig,
    client_transport: TransportConfig,
    server_transport: TransportConfig,
) -> Result<(ClientConfig, ServerConfig), SimError> {
    let id = Identity::for_seed(cfg.seed)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(id.cert.clone())
        .map_err(|e| SimError::Setup(format!("trust anchor: {e}")))?;
    let mut client_tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| SimError::Setup(format!("client TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    client_tls.enable_early_data = true;
    let mut server_tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| SimError::Setup(format!("server TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(vec![id.cert], id.key)
        .map_err(|e| SimError::Setup(format!("server TLS: {e}")))?;
    server_tls.max_early_data_size = u32::MAX;
    let client_quic: Arc<dyn quinn_proto::crypto::ClientConfig> = Arc::new(
        QuicClientConfig::try_from(client_tls)
            .map_err(|e| SimError::Setup(format!("client TLS: {e}")))?,
    );
    let server_quic: Arc<dyn quinn_proto::crypto::ServerConfig> = Arc::new(
        QuicServerConfig::try_from(server_tls)
            .map_err(|e| SimError::Setup(format!("server TLS: {e}")))?,
    );
    let (client_crypto, server_crypto) = match cfg.crypto {
        CryptoMode::Real => (client_quic, server_quic),
        CryptoMode::Null => (
            Arc::new(NullClientConfig { inner: client_quic }) as Arc<_>,
            Arc::new(NullServerConfig { inner: server_quic }) as Arc<_>,
        ),
    };
    let mut client = ClientConfig::new(client_crypto);
    client
        .transport_config(Arc::new(client_transport))
        .initial_dst_cid_provider(initial_dcid_provider(cfg.seed));
    let mut server = ServerConfig::with_crypto(server_crypto);
    let mut tokens = ValidationTokenConfig::default();
    // No NEW_TOKEN frames: a single connection never uses them, and they embed wall-clock time.
    tokens.sent(0);
    server
        .transport_config(Arc::new(server_transport))
        .validation_token_config(tokens);
    Ok((client, server))
}

/// The server name to connect to.
pub(crate) fn server_name() -> &'static str {
    SERVER_NAME
}

/// Attaches qlog streams to both transport configs, files `<run_id>-client.sqlog` and
/// `<run_id>-server.sqlog` in `dir`, times relative to the virtual base.
#[cfg(feature = "qlog")]
pub(crate) fn attach_qlog(
    cfg: &SimConfig,
    dir: &std::path::Path,
    base: Instant,
    client: &mut TransportConfig,
    server: &mut TransportConfig,
) -> Result<(), SimError> {
    use quinn_proto::QlogConfig;
    std::fs::create_dir_all(dir).map_err(|error| SimError::Qlog {
        path: dir.display().to_string(),
        error,
    })?;
    for (side, t) in [("client", client), ("server", server)] {
        let path = dir.join(format!("{}-{side}.sqlog", sanitize(&cfg.run_id)));
        let file = std::fs::File::create(&path).map_err(|error| SimError::Qlog {
            path: path.display().to_string(),
            error,
        })?;
        let mut q = QlogConfig::default();
        q.writer(Box::new(std::io::BufWriter::with_capacity(1 << 20, file)))
            .title(Some(format!("hare-sim {} {side}", cfg.run_id)))
            .description(Some(format!("controller {}", cfg.controller)))
            .start_time(base);
        t.qlog_stream(q.into_stream());
    }
    Ok(())
}

/// Without the `qlog` feature a qlog directory is a configuration error.
#[cfg(not(feature = "qlog"))]
pub(crate) fn attach_qlog(
    _cfg: &SimConfig,
    dir: &std::path::Path,
    _base: Instant,
    _client: &mut TransportConfig,
    _server: &mut TransportConfig,
) -> Result<(), SimError> {
    Err(SimError::Setting {
        field: "qlog_dir",
        value: dir.display().to_string(),
        expected: "no qlog directory: hare-sim was built without its `qlog` feature".into(),
    })
}

/// A run id made safe as a file name.
#[cfg_attr(not(feature = "qlog"), allow(dead_code))]
fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
