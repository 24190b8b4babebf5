//! The assertion budget: functions and assertions in a crate's non-test
//! code, so a test can hold each crate to at least one assertion per three
//! functions (TigerBeetle's style asks for two per function).
//!
//! Non-test code is every `.rs` file under `src/` except `tests.rs` files,
//! modules declared under `#[cfg(test)]`, and items marked `#[cfg(test)]`
//! or `#[test]`. Comments, string and character literals are blanked first,
//! so a brace, a `fn` or an `assert!` inside them counts for nothing. A
//! function is a `fn name` with a body (a trait's bodiless declarations are
//! not counted); an assertion is any `assert!`, `assert_eq!`, `assert_ne!`
//! or their `debug_` forms.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// What one crate's non-test code holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Functions with a body.
    pub functions: u64,
    /// Assertion macros.
    pub assertions: u64,
}

impl Budget {
    /// Assertions per function.
    pub fn ratio(&self) -> f64 {
        self.assertions as f64 / self.functions.max(1) as f64
    }

    /// At least one assertion per three functions.
    pub fn within(&self) -> bool {
        self.assertions * 3 >= self.functions
    }
}

/// Counts the non-test code under `src` (a crate's `src/` directory).
pub fn count_crate(src: &Path) -> io::Result<Budget> {
    let mut total = Budget::default();
    for (_, b) in count_files(src)? {
        total.functions += b.functions;
        total.assertions += b.assertions;
    }
    Ok(total)
}

/// Counts each non-test file under `src`, in path order.
pub fn count_files(src: &Path) -> io::Result<Vec<(PathBuf, Budget)>> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    files.sort();
    let mut test_modules = Vec::new();
    let mut sources = Vec::new();
    for path in files {
        let code = blank(&fs::read_to_string(&path)?);
        for name in test_module_names(&code) {
            test_modules.extend(child_module_paths(&path, &name));
        }
        sources.push((path, code));
    }
    Ok(sources
        .into_iter()
        .filter(|(path, _)| {
            !(path.file_name().is_some_and(|n| n == "tests.rs")
                || test_modules.iter().any(|m| m == path))
        })
        .map(|(path, code)| {
            let b = count_code(&strip_test_items(&code));
            (path, b)
        })
        .collect())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// Blanks comments, string literals and character literals with spaces
/// (newlines kept), leaving the code's structure.
pub fn blank(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let clear = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            rest.iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p)
        } else if rest.starts_with(b"/*") {
            block_comment_end(b, i)
        } else if let Some(hashes) = raw_string_start(b, i) {
            raw_string_end(b, i, hashes)
        } else if rest[0] == b'"' {
            string_end(b, i + 1)
        } else if rest[0] == b'\'' {
            char_end(b, i).unwrap_or(i + 1)
        } else {
            i + 1
        };
        if end > i + 1 || rest[0] == b'"' {
            clear(&mut out, i, end);
        }
        i = end.max(i + 1);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn block_comment_end(b: &[u8], start: usize) -> usize {
    let (mut depth, mut i) = (0usize, start);
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// `r"`, `r#"`, `br##"`...: the number of hashes, if a raw string starts here.
fn raw_string_start(b: &[u8], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let j = if b[i] == b'b' { i + 1 } else { i };
    if b.get(j) != Some(&b'r') {
        return None;
    }
    let hashes = b[j + 1..].iter().take_while(|&&c| c == b'#').count();
    (b.get(j + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

fn raw_string_end(b: &[u8], start: usize, hashes: usize) -> usize {
    let open = b[start..]
        .iter()
        .position(|&c| c == b'"')
        .map_or(b.len(), |p| start + p);
    let mut i = open + 1;
    while i < b.len() {
        if b[i] == b'"'
            && b[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    b.len()
}

/// The end of a string whose contents start at `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a character literal at `i`, or `None` for a lifetime.
fn char_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i + 1) == Some(&b'\\') {
        // Skip the escaped character, which may itself be a quote.
        let close = b.get(i + 3..)?.iter().position(|&c| c == b'\'')?;
        return Some(i + 3 + close + 1);
    }
    // One character, possibly several UTF-8 bytes, then the closing quote.
    let width = match b.get(i + 1)? {
        c if *c < 0x80 => 1,
        c if *c >= 0xf0 => 4,
        c if *c >= 0xe0 => 3,
        _ => 2,
    };
    (b.get(i + 1 + width) == Some(&b'\'')).then_some(i + 2 + width)
}

/// Names of modules declared `#[cfg(test)] mod name;` in blanked code.
fn test_module_names(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(p) = rest.find("#[cfg(test)]") {
        rest = &rest[p + "#[cfg(test)]".len()..];
        let item = rest.trim_start();
        if let Some(decl) = item.strip_prefix("mod ") {
            let name: String = decl
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if decl.trim_start()[name.len()..]
                .trim_start()
                .starts_with(';')
            {
                names.push(name);
            }
        }
    }
    names
}

/// Where module `name` declared in `parent` may live.
fn child_module_paths(parent: &Path, name: &str) -> Vec<PathBuf> {
    let dir = parent.parent().unwrap_or(Path::new("."));
    let stem = parent.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let base = match stem {
        "lib" | "main" | "mod" => dir.to_path_buf(),
        _ => dir.join(stem),
    };
    vec![
        base.join(format!("{name}.rs")),
        base.join(name).join("mod.rs"),
    ]
}

/// Removes every item marked `#[cfg(test)]` or `#[test]` from blanked code.
fn strip_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    loop {
        let next = ["#[cfg(test)]", "#[test]"]
            .iter()
            .filter_map(|m| rest.find(m).map(|p| (p, m.len())))
            .min();
        let Some((p, len)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..p]);
        rest = &rest[item_end(rest, p + len)..];
    }
}

/// The end of the item starting at `i` (just after its attribute). A
/// declaration ends at its first `;` outside brackets or with its first
/// block; a field or statement also ends at a `,` or before the `}` that
/// closes what holds it.
fn item_end(code: &str, i: usize) -> usize {
    const DECLS: [&str; 11] = [
        "fn", "impl", "mod", "struct", "enum", "trait", "type", "const", "static", "use", "unsafe",
    ];
    let mut head = code[i..].trim_start();
    while head.starts_with("#[") {
        let close = bracket_end(head.as_bytes());
        head = head[close..].trim_start();
    }
    let first = head
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .find(|w| !w.is_empty() && !["pub", "crate", "super", "in"].contains(w))
        .unwrap_or("");
    let decl = DECLS.contains(&first);
    let b = code.as_bytes();
    let mut depth = 0i64;
    for j in i..b.len() {
        match b[j] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return j + 1,
            b',' if depth == 0 && !decl => return j + 1,
            b'}' if depth == 0 && !decl => return j,
            b'{' => return block_end(b, j),
            _ => {}
        }
    }
    b.len()
}

/// The end of the attribute `#[...]` that `b` starts with.
fn bracket_end(b: &[u8]) -> usize {
    let mut depth = 0i64;
    for (k, &c) in b.iter().enumerate() {
        match c {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

fn block_end(b: &[u8], open: usize) -> usize {
    let mut depth = 0i64;
    for (k, &c) in b[open..].iter().enumerate() {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return open + k + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

const ASSERTIONS: [&str; 6] = [
    "assert!",
    "assert_eq!",
    "assert_ne!",
    "debug_assert!",
    "debug_assert_eq!",
    "debug_assert_ne!",
];

/// Counts functions with a body and assertion macros in blanked code.
pub fn count_code(code: &str) -> Budget {
    let b = code.as_bytes();
    let mut budget = Budget::default();
    let mut i = 0;
    while i < b.len() {
        let starts_word = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if !starts_word || !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
            i += 1;
            continue;
        }
        let len = b[i..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        let word = &code[i..i + len];
        let after = &code[i + len..];
        if word == "fn" && after.starts_with(char::is_whitespace) && has_body(after) {
            budget.functions += 1;
        } else if after.starts_with('!') && ASSERTIONS.contains(&&code[i..=i + len]) {
            budget.assertions += 1;
        }
        i += len;
    }
    budget
}

/// Whether a function signature (what follows `fn`) reaches a body before a `;`.
fn has_body(sig: &str) -> bool {
    let mut depth = 0i64;
    for c in sig.bytes() {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return false,
            b'{' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_functions_and_assertions_but_not_tests_or_literals() {
        let src = r##"
            // fn commented() { assert!(x); }
            /* fn block() { assert!(y); } */
            fn a(x: u8) -> u8 {
                assert!(x > 0, "{}", '{');
                debug_assert_eq!(x, 1, "fn in a string { ");
                let s = r#"assert!(z) }"#;
                x
            }
            trait T { fn declared(&self); fn provided(&self) {} }
            fn takes(f: fn(u8) -> u8) -> u8 { f(1) }
            #[test]
            fn a_test() { assert!(true); }
            #[cfg(test)]
            mod tests { fn helper() { assert_eq!(1, 1); } }
            fn last<'a>(s: &'a str) -> &'a str { let q = '\''; s }
            struct S {
                #[cfg(test)]
                shadow: Map<u32, u64>,
                #[cfg(test)]
                n: u64,
            }
            impl S { fn new() -> S { S { #[cfg(test)] n: 0 } } }
            #[cfg(test)]
            #[allow(dead_code)]
            fn generic<A, B>(a: A) { assert!(a); }
        "##;
        let b = count_code(&strip_test_items(&blank(src)));
        assert_eq!(
            b,
            Budget {
                functions: 5,
                assertions: 2
            }
        );
        assert!(b.within());
        let under = Budget {
            functions: 7,
            assertions: 2,
        };
        assert!(!under.within());
    }

    #[test]
    fn test_modules_declared_elsewhere_are_found() {
        let code = blank("mod a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod proptests;\n");
        assert_eq!(test_module_names(&code), ["tests", "proptests"]);
        let paths = child_module_paths(Path::new("src/ftl.rs"), "proptests");
        assert_eq!(paths[0], Path::new("src/ftl/proptests.rs"));
        let paths = child_module_paths(Path::new("src/lib.rs"), "tests");
        assert_eq!(paths[1], Path::new("src/tests/mod.rs"));
    }
}
