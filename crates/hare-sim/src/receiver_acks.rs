//! The thread-like receiver ACK pattern: a model of a Linux 2.6 receiver's acknowledgements
//! built from a quinn receiver that acknowledges every packet.
//!
//! # What the kernel does (2.6.20 to 2.6.39, `net/ipv4/tcp_input.c`)
//! A 2.6 receiver sends an ACK at once while it is in quick-ACK mode and otherwise once more
//! than one full segment is unacknowledged (`__tcp_ack_snd_check`), or when its delayed-ACK
//! timer (at least `TCP_ATO_MIN`, 40 ms at HZ=1000) expires. Quick-ACK mode is what makes
//! slow start fast: every data segment that lets the receive window grow
//! (`tcp_grow_window()`: `rcv_ssthresh` below `window_clamp`, raised by `2 * advmss` per
//! segment) sets `icsk_ack.quick |= 1`, so each such segment is acknowledged on its own. The
//! window starts at a few segments (`tcp_select_initial_window`) and grows to the clamp (3/4
//! of the receive buffer, which hare's flow-control credit stands for) after about
//! `clamp / (2 * mss)` segments; from then on the receiver acknowledges every second segment.
//!
//! # The model
//! The receiver is told (ACK frequency extension, `ack_eliciting_threshold = 0`) to
//! acknowledge every ack-eliciting packet at once, and the simulator thins its pure ACKs
//! (datagrams whose only frames are one ACK frame and padding) on the reverse path: the first
//! `clamp / (2 * mss)` pass one by one (the quick-ACK phase); after that a pure ACK is held
//! back, and the next one replaces it (QUIC ACK frames are cumulative, so it acknowledges
//! everything the held one did, as a kernel ACK of the second segment does), or the held one
//! leaves when the delayed-ACK time [`DELACK_NS`] has passed. Datagrams with other frames
//! (MAX_DATA, MAX_STREAM_DATA, handshake) always pass, after any held ACK.
//!
//! Reading frames needs the plaintext: the model runs only with the null 1-RTT cipher (the
//! simulator's default), whose header protection and payload are in clear.

use bytes::BytesMut;

/// The delayed-ACK time of the held ACK: `TCP_ATO_MIN` (HZ/25 jiffies = 40 ms).
pub const DELACK_NS: u64 = 40_000_000;

/// AEAD tag bytes at the end of each 1-RTT packet (AES-128-GCM, which the null cipher keeps).
const TAG_LEN: usize = 16;

/// Which ACKs the receiver sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReceiverAcks {
    /// quinn's own policy (or what [`crate::AckSettings`] requests).
    #[default]
    Quinn,
    /// The Linux 2.6 receiver model of this module.
    Linux26,
}

impl ReceiverAcks {
    /// Name in scenario files and reports: `"quinn"` or `"linux-2.6"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiverAcks::Quinn => "quinn",
            ReceiverAcks::Linux26 => "linux-2.6",
        }
    }
}

/// Segments a 2.6 receiver quick-ACKs while its window opens from a few segments to
/// `window_clamp` bytes (`tcp_grow_window`: `2 * advmss` per segment).
pub fn quickack_segments(window_clamp: u64, mss: u64) -> u64 {
    window_clamp / (2 * mss.max(1))
}

/// The reverse-path thinning state of [`ReceiverAcks::Linux26`].
#[derive(Debug)]
pub(crate) struct AckThinner {
    /// Destination connection id length of the server's short-header packets.
    cid_len: usize,
    /// Pure ACKs still to pass one by one.
    quick_left: u64,
    /// The held pure ACK and when it leaves anyway.
    held: Option<(BytesMut, u64)>,
}

impl AckThinner {
    /// A thinner for short headers with `cid_len`-byte connection ids and a quick-ACK phase
    /// of `quick` ACKs.
    pub fn new(cid_len: usize, quick: u64) -> Self {
        AckThinner {
            cid_len,
            quick_left: quick,
            held: None,
        }
    }

    /// When the held ACK leaves unless replaced.
    pub fn deadline(&self) -> Option<u64> {
        self.held.as_ref().map(|(_, t)| *t)
    }

    /// The held ACK if its time has come.
    pub fn due(&mut self, now: u64) -> Option<BytesMut> {
        if self.deadline().is_some_and(|t| t <= now) {
            return self.held.take().map(|(d, _)| d);
        }
        None
    }

    /// One datagram from the receiver at `now`: what goes on the wire now, in order.
    pub fn offer(&mut self, now: u64, d: BytesMut, out: &mut Vec<BytesMut>) {
        if !is_pure_ack(&d, self.cid_len) {
            out.extend(self.held.take().map(|(h, _)| h));
            out.push(d);
        } else if self.quick_left > 0 {
            self.quick_left -= 1;
            out.extend(self.held.take().map(|(h, _)| h));
            out.push(d);
        } else if self.held.take().is_some() {
            // The second segment's ACK: it covers the held one, which is dropped.
            out.push(d);
        } else {
            self.held = Some((d, now.saturating_add(DELACK_NS)));
        }
    }
}

/// True for a 1-RTT short-header packet in clear whose frames are one ACK frame (types 0x02
/// and 0x03, RFC 9000 section 19.3) followed only by PADDING.
pub(crate) fn is_pure_ack(d: &[u8], cid_len: usize) -> bool {
    let Some(&first) = d.first() else {
        return false;
    };
    // Long headers (handshake) are never thinned.
    if first & 0x80 != 0 || d.len() < TAG_LEN {
        return false;
    }
    let pn_len = usize::from(first & 0x03) + 1;
    let start = 1 + cid_len + pn_len;
    let Some(frames) = d.get(start..d.len() - TAG_LEN) else {
        return false;
    };
    let mut r = Reader(frames);
    let Some(kind) = r.varint() else {
        return false;
    };
    if kind != 0x02 && kind != 0x03 {
        return false;
    }
    // Largest acknowledged, ACK delay, range count, first range.
    let (Some(_), Some(_), Some(ranges), Some(_)) =
        (r.varint(), r.varint(), r.varint(), r.varint())
    else {
        return false;
    };
    for _ in 0..ranges {
        if r.varint().is_none() || r.varint().is_none() {
            return false;
        }
    }
    if kind == 0x03 && (0..3).any(|_| r.varint().is_none()) {
        return false;
    }
    r.0.iter().all(|&b| b == 0)
}

/// A QUIC variable-length integer reader (RFC 9000 section 16).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn varint(&mut self) -> Option<u64> {
        let first = *self.0.first()?;
        let len = 1usize << (first >> 6);
        let bytes = self.0.get(..len)?;
        let mut v = u64::from(first & 0x3f);
        for &b in &bytes[1..] {
            v = (v << 8) | u64::from(b);
        }
        self.0 = &self.0[len..];
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short-header packet with an 8-byte cid, a 2-byte packet number, `frames` and a tag.
    fn packet(frames: &[u8]) -> BytesMut {
        let mut p = vec![0x41];
        p.extend_from_slice(&[7; 8]);
        p.extend_from_slice(&[0, 5]);
        p.extend_from_slice(frames);
        p.extend_from_slice(&[0xaa; TAG_LEN]);
        BytesMut::from(&p[..])
    }

    #[test]
    fn classifies_pure_acks() {
        // ACK largest 0x1234 (2-byte varint), delay 3, one extra range, first range 1.
        let ack = [0x02, 0x52, 0x34, 0x03, 0x01, 0x01, 0x02, 0x03];
        assert!(is_pure_ack(&packet(&ack), 8));
        let mut padded = ack.to_vec();
        padded.extend_from_slice(&[0; 5]);
        assert!(is_pure_ack(&packet(&padded), 8));
        // ACK + MAX_DATA (0x10) is not pure.
        let mut with_credit = ack.to_vec();
        with_credit.extend_from_slice(&[0x10, 0x44, 0x00]);
        assert!(!is_pure_ack(&packet(&with_credit), 8));
        // ECN counts of an ACK_ECN frame are part of the frame.
        let ecn = [0x03, 0x05, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03];
        assert!(is_pure_ack(&packet(&ecn), 8));
        // A truncated frame, a long header, a STREAM frame: no.
        assert!(!is_pure_ack(&packet(&[0x02, 0x52]), 8));
        let mut long = packet(&ack);
        long[0] = 0xc1;
        assert!(!is_pure_ack(&long, 8));
        assert!(!is_pure_ack(&packet(&[0x08, 0x00]), 8));
    }

    #[test]
    fn quick_phase_then_every_second_ack_or_the_delack_timer() {
        let ack = packet(&[0x02, 0x01, 0x00, 0x00, 0x00]);
        let other = packet(&[0x10, 0x01]);
        let mut t = AckThinner::new(8, 2);
        let mut out = Vec::new();
        t.offer(0, ack.clone(), &mut out);
        t.offer(1, ack.clone(), &mut out);
        assert_eq!(out.len(), 2, "quick ACKs pass");
        out.clear();
        t.offer(2, ack.clone(), &mut out);
        assert!(out.is_empty());
        assert_eq!(t.deadline(), Some(2 + DELACK_NS));
        t.offer(3, ack.clone(), &mut out);
        assert_eq!(out.len(), 1, "the second replaces the held one");
        assert_eq!(t.deadline(), None);
        out.clear();
        t.offer(4, ack.clone(), &mut out);
        assert_eq!(t.due(5), None);
        t.offer(6, other.clone(), &mut out);
        assert_eq!(
            out,
            vec![ack.clone(), other],
            "held ACK first, then the frame"
        );
        out.clear();
        t.offer(7, ack.clone(), &mut out);
        assert_eq!(t.due(7 + DELACK_NS), Some(ack));
        assert_eq!(quickack_segments(150_000_000, 8952), 8378);
    }
}
