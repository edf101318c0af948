//! Recording a flow: the BPF program (built from `bpf/tcp_probe.bpf.c` by `build.rs`) loaded
//! with aya on the `tcp_probe` tracepoint as `tp_btf`, its ring buffer drained on a thread
//! into [`Probe`]s. Needs root, BTF (`/sys/kernel/btf/vmlinux`) and the tracepoint; each
//! missing piece is a clear error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::RingBuf;
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader};

use crate::probe::Probe;

/// The compiled BPF object (aligned: the ELF parser reads its headers in place).
static BPF_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tcp_probe.bpf.o"));

/// A running capture: the program attached, a thread draining its ring buffer.
pub struct Capture {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<Vec<Probe>>>,
}

/// Why BPF cannot run here, or `None`.
pub fn unavailable_reason() -> Option<String> {
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some(
            "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing: CONFIG_DEBUG_INFO_BTF)"
                .into(),
        );
    }
    if !hare_emu::netns::is_root() {
        return Some("loading BPF programs needs root".into());
    }
    None
}

impl Capture {
    /// Load and attach the program for the flow whose receiving end has port `dport`.
    pub fn start(dport: u16) -> Result<Capture> {
        if let Some(why) = unavailable_reason() {
            bail!("cannot record: {why}");
        }
        let btf = Btf::from_sys_fs().context("reading the kernel's BTF")?;
        let mut bpf = EbpfLoader::new()
            .btf(Some(&btf))
            .set_global("TARGET_DPORT", &dport, true)
            .load(BPF_OBJECT)
            .context("loading the BPF object (CO-RE against the running kernel's BTF)")?;
        let program: &mut BtfTracePoint = bpf
            .program_mut("tcp_probe")
            .ok_or_else(|| anyhow!("the BPF object has no program tcp_probe"))?
            .try_into()
            .context("tcp_probe is not a tp_btf program")?;
        program.load("tcp_probe", &btf).context(
            "loading the tp_btf program on tracepoint tcp_probe (does this kernel have it?)",
        )?;
        program
            .attach()
            .context("attaching to tracepoint tcp_probe")?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || drain(bpf, &flag));
        Ok(Capture { stop, thread })
    }

    /// Detach and return the records, sockets numbered from 0 in order of appearance.
    pub fn finish(self) -> Result<Vec<Probe>> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| anyhow!("the capture thread panicked"))?
    }
}

/// Drain the ring buffer until `stop`, then once more.
fn drain(mut bpf: Ebpf, stop: &AtomicBool) -> Result<Vec<Probe>> {
    let map = bpf
        .map_mut("EVENTS")
        .ok_or_else(|| anyhow!("the BPF object has no map EVENTS"))?;
    let mut ring = RingBuf::try_from(map).context("EVENTS is not a ring buffer")?;
    let mut probes = Vec::new();
    let mut sockets: HashMap<u64, u64> = HashMap::new();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let mut got = false;
        while let Some(item) = ring.next() {
            got = true;
            let mut p = Probe::from_raw(&item)?;
            let n = sockets.len() as u64;
            p.sk = *sockets.entry(p.sk).or_insert(n);
            probes.push(p);
        }
        if stopping {
            return Ok(probes);
        }
        if !got {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
