//! Fixture generator for hare-analyze: one neqo client and one neqo server in one process,
//! joined by an emulated path (a rate-limited drop-tail bottleneck with a one-way delay,
//! plus a deterministic drop of every Nth 1-RTT datagram of the data sender), both writing
//! neqo's own qlog. Time is virtual: neqo takes "now" as an argument everywhere, so the run
//! jumps from one arrival or timer to the next and every instant in the truth file is the
//! exact instant neqo was given (and logged). At the end the program writes
//! `<out>/<name>.truth.json` with what neqo itself counted. See ../README.md.
//!
//! Usage: qlog-gen-neqo OUT_DIR NAME --nss-db DIR [--bytes N] [--rate-mbps R]
//!        [--delay-ms D] [--queue-bytes Q] [--drop-every N] [--sender client|server]
//!        [--cc cubic|reno] [--slow-start classic|hystart]

mod path;
mod run;
mod truth;

use std::path::PathBuf;
use std::time::Duration;

/// What the command line asked for.
pub struct Opts {
    pub out: PathBuf,
    pub name: String,
    pub nss_db: PathBuf,
    pub bytes: usize,
    pub rate_bps: f64,
    pub delay: Duration,
    pub queue_bytes: usize,
    pub drop_every: u64,
    pub sender_is_client: bool,
    pub cc: String,
    pub slow_start: String,
}

fn parse() -> Result<Opts, String> {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(args.next().ok_or("missing OUT_DIR")?);
    let name = args.next().ok_or("missing NAME")?;
    let mut o = Opts {
        out,
        name,
        nss_db: PathBuf::new(),
        bytes: 1_000_000,
        rate_bps: 5e6,
        delay: Duration::from_millis(3),
        queue_bytes: 20_000,
        drop_every: 250,
        sender_is_client: true,
        cc: "cubic".into(),
        slow_start: "classic".into(),
    };
    while let Some(flag) = args.next() {
        let v = args.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<f64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--nss-db" => o.nss_db = PathBuf::from(v),
            "--bytes" => o.bytes = num(&v)? as usize,
            "--rate-mbps" => o.rate_bps = num(&v)? * 1e6,
            "--delay-ms" => o.delay = Duration::from_secs_f64(num(&v)? / 1000.0),
            "--queue-bytes" => o.queue_bytes = num(&v)? as usize,
            "--drop-every" => o.drop_every = num(&v)? as u64,
            "--sender" => match v.as_str() {
                "client" => o.sender_is_client = true,
                "server" => o.sender_is_client = false,
                _ => return Err(format!("--sender: client or server, not {v}")),
            },
            "--cc" => o.cc = v,
            "--slow-start" => o.slow_start = v,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if o.nss_db.as_os_str().is_empty() {
        return Err("--nss-db DIR is needed (neqo's test-fixture/db holds the key \"key\")".into());
    }
    Ok(o)
}

fn main() {
    let res = parse().and_then(|o| {
        let r = run::run(&o)?;
        truth::write(&o, &r)
    });
    match res {
        Ok(p) => println!("{}", p.display()),
        Err(e) => {
            eprintln!("qlog-gen-neqo: {e}");
            std::process::exit(1);
        }
    }
}
