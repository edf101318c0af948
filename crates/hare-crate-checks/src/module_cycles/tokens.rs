//! The module paths a Rust source names: every path that starts with `crate`, `super` or
//! `self`, with `use` groups (`crate::{a, b::{c, d}}`) expanded, and the line it starts on.
//! Comments and string and character literals are skipped; nothing else of Rust's grammar is
//! needed.

/// One token: an identifier, `::`, or a single punctuation character.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Path,
    Punct(char),
}

/// Every path starting with `crate`, `super` or `self` (not after `::`), expanded, with its
/// line.
pub(super) fn paths(text: &str) -> Vec<(Vec<String>, usize)> {
    let toks = tokenize(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let (tok, line) = &toks[i];
        let starts = matches!(tok, Tok::Ident(s) if s == "crate" || s == "super" || s == "self")
            && (i == 0 || toks[i - 1].0 != Tok::Path)
            && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path);
        if starts {
            let (trees, next) = tree(&toks, i);
            out.extend(trees.into_iter().map(|p| (p, *line)));
            i = next.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// One use-tree from `i`: its expanded paths and the index after it.
fn tree(toks: &[(Tok, usize)], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                i += 1;
                if toks.get(i).map(|t| &t.0) != Some(&Tok::Path) {
                    return (vec![prefix], i);
                }
                i += 1;
            }
            Some(Tok::Punct('{')) => return group(toks, i + 1, &prefix),
            _ => return (vec![prefix], i),
        }
    }
}

/// The items of a `{...}` group after `prefix`, from just inside the brace.
fn group(toks: &[(Tok, usize)], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut out = Vec::new();
    while i < toks.len() {
        if toks[i].0 == Tok::Punct('}') {
            return (out, i + 1);
        }
        let (items, next) = tree(toks, i);
        for item in items.into_iter().filter(|p| !p.is_empty()) {
            out.push(prefix.iter().cloned().chain(item).collect());
        }
        i = next.max(i + 1);
        // Skip `as name`, `*` and the like up to the next item or the end of the group.
        while i < toks.len() && !matches!(toks[i].0, Tok::Punct(',') | Tok::Punct('}')) {
            i += 1;
        }
        if toks.get(i).map(|t| &t.0) == Some(&Tok::Punct(',')) {
            i += 1;
        }
    }
    (out, i)
}

/// Identifiers, `::` and punctuation with their line; comments and literals dropped.
fn tokenize(text: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = text.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_until(&b, i + 2, &mut line, |b, j| {
                b[j] == '*' && b.get(j + 1) == Some(&'/')
            }) + 2;
        } else if c == '"' {
            i = string_end(&b, i + 1, &mut line);
        } else if c == '\'' {
            i = quote_end(&b, i);
        } else if c == ':' && next == Some(':') {
            out.push((Tok::Path, line));
            i += 2;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            let word: String = b[start..i].iter().collect();
            if (word == "r" || word == "br") && matches!(b.get(i), Some('#') | Some('"')) {
                i = raw_string_end(&b, i, &mut line);
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else {
            if !c.is_whitespace() {
                out.push((Tok::Punct(c), line));
            }
            i += 1;
        }
    }
    out
}

/// The index of the first position from `i` where `at` holds, counting lines.
fn skip_until(
    b: &[char],
    mut i: usize,
    line: &mut usize,
    at: impl Fn(&[char], usize) -> bool,
) -> usize {
    while i < b.len() && !at(b, i) {
        if b[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    i
}

/// After a string's opening quote: the index after its closing quote (escapes honoured).
fn string_end(b: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < b.len() {
        match b[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            '\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    i
}

/// At `#`s or `"` after `r`: the index after the raw string's end.
fn raw_string_end(b: &[char], mut i: usize, line: &mut usize) -> usize {
    let hashes = b[i..].iter().take_while(|c| **c == '#').count();
    i += hashes + 1;
    let end = skip_until(b, i, line, |b, j| {
        b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#'))
    });
    end + 1 + hashes
}

/// At a `'`: past a character literal (`'a'`, `'\n'`), or past the quote of a lifetime.
fn quote_end(b: &[char], i: usize) -> usize {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some('\\'), _) => {
            let mut j = i + 2;
            while j < b.len() && b[j] != '\'' {
                j += 1;
            }
            j + 1
        }
        (Some(_), Some('\'')) => i + 3,
        _ => i + 1,
    }
}
