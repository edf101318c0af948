//! The workspace's own shape: no crate has modules that import each other in a circle.

use std::path::Path;

use hare_crate_checks::module_cycles::cycles;

#[test]
fn no_crate_has_modules_that_import_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = String::new();
    let mut crates = 0;
    for group in ["crates", "bins"] {
        let mut dirs: Vec<_> = std::fs::read_dir(root.join(group))
            .expect("workspace folder")
            .filter_map(|e| e.ok().map(|e| e.path().join("src")))
            .filter(|src| src.is_dir())
            .collect();
        dirs.sort();
        for src in dirs {
            crates += 1;
            for cycle in cycles(&src).expect("sources readable") {
                found.push_str(&format!("{}: {cycle}", src.display()));
            }
        }
    }
    assert!(
        crates >= 10,
        "only {crates} crates found under {}",
        root.display()
    );
    assert!(found.is_empty(), "{found}");
}
