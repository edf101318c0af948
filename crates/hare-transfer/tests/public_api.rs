//! The public surface of hare-transfer (what hare-send, hare-recv and hare-lab use), listed
//! from rustdoc's JSON output and compared with the committed `public-api.txt`, so that every
//! change to it shows in review.
//!
//! Regenerate after a deliberate change:
//! `HARE_BLESS=1 cargo test -p hare-transfer --test public_api`.

use std::path::Path;

use hare_crate_checks::public_api::{check, Crate};

#[test]
fn public_api_matches_the_committed_list() {
    let krate = Crate {
        manifest_dir: Path::new(env!("CARGO_MANIFEST_DIR")),
        lib_name: "hare_transfer",
        features: "",
        scratch: Path::new(env!("CARGO_TARGET_TMPDIR")),
    };
    if let Err(diff) = check(&krate) {
        panic!("{diff}");
    }
}
