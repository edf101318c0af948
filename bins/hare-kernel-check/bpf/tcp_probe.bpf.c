// SPDX-License-Identifier: GPL-2.0-only
// hare-kernel-check's capture: one record per `tcp_probe` tracepoint hit (tp_btf) on the
// sender's socket of one flow. The tracepoint fires at the top of tcp_rcv_established(),
// before the segment is processed, so record k+1 holds the state after segment k.
//
// The kernel structures are stubs with `preserve_access_index`: clang emits CO-RE
// relocations for every field read here and the loader fits them to the running kernel's
// BTF, so no vmlinux.h is needed. CUBIC's `struct bictcp` is read from `inet_csk_ca(sk)` the
// same way (it is in vmlinux BTF when tcp_cubic is built in).

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define SEC(name) __attribute__((section(name), used))
#define CORE __attribute__((preserve_access_index))

// Helper ids of include/uapi/linux/bpf.h.
static long (*bpf_probe_read_kernel)(void *dst, u32 size, const void *src) = (void *)113;
static u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static u64 (*bpf_jiffies64)(void) = (void *)118;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, u64 size, u64 flags) = (void *)130;

// One field through a CO-RE relocated offset.
#define READ(dst, src, field)                                                                  \
	bpf_probe_read_kernel(&(dst), sizeof(dst), __builtin_preserve_access_index(&(src)->field))

// A bitfield: load the bytes that hold it at their relocated offset and size, then shift it
// out of a u64 by the relocated shifts (field info kinds of clang's BPF CO-RE:
// 0 byte offset, 1 byte size, 4 left shift, 5 right shift).
#define READ_BITS(src, field)                                                                  \
	({                                                                                     \
		u64 v_ = 0;                                                                    \
		bpf_probe_read_kernel(&v_, __builtin_preserve_field_info((src)->field, 1),     \
				      (const void *)(src) +                                    \
					      __builtin_preserve_field_info((src)->field, 0)); \
		v_ <<= __builtin_preserve_field_info((src)->field, 4);                        \
		v_ >>= __builtin_preserve_field_info((src)->field, 5);                        \
		v_;                                                                            \
	})

struct sock_common {
	u16 skc_dport;
	u16 skc_num;
} CORE;

struct sock {
	struct sock_common __sk_common;
	u32 sk_pacing_status;
	unsigned long sk_pacing_rate;
	unsigned int sk_gso_max_size;
} CORE;

struct inet_connection_sock {
	u8 icsk_ca_state : 5;
	u64 icsk_ca_priv[13];
} CORE;

struct tcp_rack {
	u64 mstamp;
	u32 rtt_us;
} CORE;

struct tcp_sock {
	u32 snd_cwnd;
	u32 snd_ssthresh;
	u32 snd_cwnd_cnt;
	u32 snd_cwnd_clamp;
	u32 prior_cwnd;
	u32 delivered;
	u32 snd_una;
	u32 snd_nxt;
	u32 high_seq;
	u32 undo_marker;
	u32 srtt_us;
	u32 mss_cache;
	u32 packets_out;
	u32 sacked_out;
	u32 lost_out;
	u32 retrans_out;
	u32 max_packets_out;
	u8 is_cwnd_limited : 1;
	u64 tcp_mstamp;
	struct tcp_rack rack;
} CORE;

struct bictcp {
	u32 cnt;
	u32 last_max_cwnd;
	u32 last_cwnd;
	u32 last_time;
	u32 bic_origin_point;
	u32 bic_K;
	u32 delay_min;
	u32 epoch_start;
	u32 ack_cnt;
	u32 tcp_cwnd;
	u8 sample_cnt;
	u8 found;
	u32 round_start;
	u32 end_seq;
	u32 last_ack;
	u32 curr_rtt;
} CORE;

// The record: the layout `probe.rs` reads (keep in step; little-endian, no padding holes).
struct probe {
	u64 ktime_ns;
	u64 jiffies;
	u64 tcp_mstamp;
	u64 rack_mstamp;
	u64 pacing_rate;
	u64 sk;
	u32 snd_cwnd, snd_ssthresh, snd_cwnd_cnt, snd_cwnd_clamp;
	u32 prior_cwnd, delivered, snd_una, snd_nxt;
	u32 high_seq, undo_marker, srtt_us, mss_cache;
	u32 packets_out, sacked_out, lost_out, retrans_out;
	u32 max_packets_out, rack_rtt_us;
	u32 cnt, last_max_cwnd, last_cwnd, last_time;
	u32 bic_origin_point, bic_k, delay_min, epoch_start;
	u32 ack_cnt, tcp_cwnd, round_start, end_seq;
	u32 last_ack, curr_rtt;
	u32 pacing_status, gso_max_size;
	u16 sport, dport;
	u8 ca_state, is_cwnd_limited, sample_cnt, found;
};

#define BPF_MAP_TYPE_RINGBUF 27

struct {
	int (*type)[BPF_MAP_TYPE_RINGBUF];
	int (*max_entries)[64 << 20];
} EVENTS SEC(".maps");

// The flow to record: the remote (receiving) end's port, host order; set by the loader.
volatile const u16 TARGET_DPORT = 0;

SEC("tp_btf/tcp_probe")
int tcp_probe(u64 *ctx)
{
	struct sock *sk = (struct sock *)ctx[0];
	struct probe p = {};
	u16 dport_be = 0;
	READ(dport_be, &sk->__sk_common, skc_dport);
	p.dport = (u16)((dport_be >> 8) | (dport_be << 8));
	if (p.dport != TARGET_DPORT)
		return 0;
	READ(p.sport, &sk->__sk_common, skc_num);
	p.ktime_ns = bpf_ktime_get_ns();
	p.jiffies = bpf_jiffies64();
	p.sk = (u64)sk;
	unsigned long rate = 0;
	READ(rate, sk, sk_pacing_rate);
	p.pacing_rate = rate;
	READ(p.pacing_status, sk, sk_pacing_status);
	READ(p.gso_max_size, sk, sk_gso_max_size);

	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	p.ca_state = READ_BITS(icsk, icsk_ca_state);
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	READ(p.snd_cwnd, tp, snd_cwnd);
	READ(p.snd_ssthresh, tp, snd_ssthresh);
	READ(p.snd_cwnd_cnt, tp, snd_cwnd_cnt);
	READ(p.snd_cwnd_clamp, tp, snd_cwnd_clamp);
	READ(p.prior_cwnd, tp, prior_cwnd);
	READ(p.delivered, tp, delivered);
	READ(p.snd_una, tp, snd_una);
	READ(p.snd_nxt, tp, snd_nxt);
	READ(p.high_seq, tp, high_seq);
	READ(p.undo_marker, tp, undo_marker);
	READ(p.srtt_us, tp, srtt_us);
	READ(p.mss_cache, tp, mss_cache);
	READ(p.packets_out, tp, packets_out);
	READ(p.sacked_out, tp, sacked_out);
	READ(p.lost_out, tp, lost_out);
	READ(p.retrans_out, tp, retrans_out);
	READ(p.max_packets_out, tp, max_packets_out);
	p.is_cwnd_limited = READ_BITS(tp, is_cwnd_limited);
	READ(p.tcp_mstamp, tp, tcp_mstamp);
	READ(p.rack_mstamp, &tp->rack, mstamp);
	READ(p.rack_rtt_us, &tp->rack, rtt_us);

	struct bictcp *ca = (struct bictcp *)icsk->icsk_ca_priv;
	READ(p.cnt, ca, cnt);
	READ(p.last_max_cwnd, ca, last_max_cwnd);
	READ(p.last_cwnd, ca, last_cwnd);
	READ(p.last_time, ca, last_time);
	READ(p.bic_origin_point, ca, bic_origin_point);
	READ(p.bic_k, ca, bic_K);
	READ(p.delay_min, ca, delay_min);
	READ(p.epoch_start, ca, epoch_start);
	READ(p.ack_cnt, ca, ack_cnt);
	READ(p.tcp_cwnd, ca, tcp_cwnd);
	READ(p.sample_cnt, ca, sample_cnt);
	READ(p.found, ca, found);
	READ(p.round_start, ca, round_start);
	READ(p.end_seq, ca, end_seq);
	READ(p.last_ack, ca, last_ack);
	READ(p.curr_rtt, ca, curr_rtt);

	bpf_ringbuf_output(&EVENTS, &p, sizeof(p), 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
