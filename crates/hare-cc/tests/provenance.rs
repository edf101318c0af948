//! hare-cc follows GPL-2.0 kernel files decision by decision but copies no kernel text: its
//! comments may name kernel identifiers and quote short formulas, never kernel code. This test
//! scans every comment of the crate's sources (library, tests, benches, examples) for what a
//! copied passage looks like:
//!
//! - two or more consecutive comment lines that read as C statements (ending in `;`, `{` or
//!   `}` with C syntax: `->`, `if (`, `u32`, `+=`, a call ending in `);`, ...), outside the
//!   Rust examples of doc comments;
//! - a fenced block marked as C in a comment;
//! - one backquoted C passage of three statements or more, or longer than 90 characters.
//!
//! A formula such as `cwnd = min(cwnd + acked, ssthresh)` passes; a function body does not.
//! The checker runs first on a sample of each kind, so that a broken scanner cannot pass by
//! finding nothing.

use std::path::{Path, PathBuf};

/// Longest backquoted C passage a comment may carry.
const MAX_C_SPAN: usize = 90;

/// Words and operators that make a comment line read as C rather than prose or Rust.
fn looks_like_c(text: &str) -> bool {
    const HINTS: [&str; 14] = [
        "->", "if (", "while (", "for (", "u32 ", "u64 ", "s32)", "static ", "+=", "-=", "<<=",
        ">>=", "++;", "return ",
    ];
    HINTS.iter().any(|h| text.contains(h)) || text.trim_end().ends_with(");")
}

/// A comment line whose text is a C statement or brace.
fn is_c_statement(text: &str) -> bool {
    let t = text.trim_end();
    (t.ends_with(';') || t.ends_with('{') || t.ends_with('}')) && looks_like_c(t)
}

/// The text of a `//`, `///` or `//!` comment line, if the line is one.
fn comment_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let rest = t
        .strip_prefix("///")
        .or_else(|| t.strip_prefix("//!"))
        .or_else(|| t.strip_prefix("//"))?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// What `source` quotes as kernel code: `(line number, reason)` per finding.
fn findings(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    // Inside a fenced block of a comment: `Some(true)` for C, `Some(false)` for Rust.
    let mut fence: Option<bool> = None;
    let close_run = |run: &mut Vec<usize>, found: &mut Vec<(usize, String)>| {
        if run.len() >= 2 {
            found.push((run[0], format!("{} consecutive lines of C", run.len())));
        }
        run.clear();
    };
    for (i, line) in source.lines().enumerate() {
        let n = i + 1;
        let Some(text) = comment_text(line) else {
            close_run(&mut run, &mut found);
            fence = None;
            continue;
        };
        let trimmed = text.trim();
        if let Some(lang) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => {
                    let c = matches!(lang.trim(), "c" | "C");
                    if c {
                        found.push((n, "a C block".to_string()));
                    }
                    Some(c)
                }
            };
            close_run(&mut run, &mut found);
            continue;
        }
        if fence == Some(false) {
            continue;
        }
        if is_c_statement(trimmed) {
            run.push(n);
        } else {
            close_run(&mut run, &mut found);
        }
        for span in trimmed.split('`').skip(1).step_by(2) {
            let statements = span.matches(';').count();
            if looks_like_c(span) && (statements >= 3 || span.len() > MAX_C_SPAN) {
                found.push((
                    n,
                    format!("a quoted C passage of {} characters", span.len()),
                ));
            }
        }
    }
    close_run(&mut run, &mut found);
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_scanner_finds_each_kind_of_copied_code() {
    // Made-up C in the shape of a kernel function, not kernel text.
    let body = "/// The step:\n/// if (x->a >= y) {\n///     x->a -= y;\n/// }\nfn f() {}\n";
    assert_eq!(findings(body).len(), 1, "{:?}", findings(body));
    let block = "//! ```c\n//! int a;\n//! ```\n";
    assert_eq!(findings(block).len(), 1);
    let long = "// `a->b = 1; a->c = 2; a->d = 3;` in one go\n";
    assert_eq!(findings(long).len(), 1);
    // What the rule allows: identifiers, a short formula, Rust examples.
    let fine = "/// `tcp_slow_start()`: `cwnd = min(cwnd + acked, ssthresh)`.\n\
                /// ```\n/// let x = f(1);\n/// let y = g(x);\n/// ```\n";
    assert!(findings(fine).is_empty(), "{:?}", findings(fine));
}

#[test]
fn no_comment_quotes_kernel_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "benches", "examples"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 30, "the crate's sources were not found");
    let this = Path::new(file!()).file_name().expect("file name");
    let mut report = String::new();
    for file in files.iter().filter(|f| f.file_name() != Some(this)) {
        let source = std::fs::read_to_string(file).expect("read source");
        for (line, what) in findings(&source) {
            report.push_str(&format!("{}:{line}: {what}\n", file.display()));
        }
    }
    assert!(
        report.is_empty(),
        "comments that quote kernel code (say it in words, or keep to identifiers and a short \
         formula):\n{report}"
    );
}
