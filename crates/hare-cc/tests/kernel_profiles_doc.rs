//! `PROFILES.md` carries the table of every constant of every profile; this test keeps it in
//! step with the code (regenerate with `HARE_PRINT_PROFILE_TABLE=1 cargo test -p hare-cc
//! --test kernel_profiles_doc -- --nocapture`).

use hare_cc::Profile;

fn table() -> String {
    let mut out = String::from("| key |");
    for n in Profile::NAMES {
        out.push_str(&format!(" {n} |"));
    }
    out.push_str("\n|---|");
    for _ in Profile::NAMES {
        out.push_str("---|");
    }
    out.push('\n');
    let profiles: Vec<Profile> = Profile::NAMES
        .iter()
        .map(|n| Profile::named(n).expect("named"))
        .collect();
    for key in Profile::KEYS {
        out.push_str(&format!("| `{key}` |"));
        for p in &profiles {
            out.push_str(&format!(" {} |", p.get(key).expect("key")));
        }
        out.push('\n');
    }
    out
}

#[test]
fn profiles_md_table_matches_the_code() {
    let t = table();
    if std::env::var_os("HARE_PRINT_PROFILE_TABLE").is_some() {
        println!("{t}");
    }
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/PROFILES.md"))
        .expect("PROFILES.md next to Cargo.toml");
    assert!(
        doc.contains(&t),
        "PROFILES.md table is stale; regenerate it:\n{t}"
    );
}
