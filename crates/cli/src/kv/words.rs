//! How a `kv shell` line splits into words: whitespace separates them,
//! `"..."` and `'...'` group them as a Unix shell does. A word stays in the
//! TSV escaped form the store's keys are shown in (`\t`, `\xNN`), so it is
//! decoded like any other key: a backslash before a quote or a space stands
//! for that character, and single quotes take everything literally.

/// One word of a line, in TSV escaped form, and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub start: usize,
}

/// The words of `line`; an unclosed quote is an error.
pub fn split(line: &str) -> Result<Vec<Word>, String> {
    let mut words = Vec::new();
    let mut chars = line.char_indices().peekable();
    while let Some(&(start, _)) = chars.peek() {
        if chars.next_if(|(_, c)| c.is_whitespace()).is_some() {
            continue;
        }
        let mut text = String::new();
        while let Some(&(_, c)) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            match c {
                '\'' => single(&mut chars, &mut text)?,
                '"' => double(&mut chars, &mut text)?,
                '\\' => backslash(&mut chars, &mut text),
                c => text.push(c),
            }
        }
        words.push(Word { text, start });
    }
    Ok(words)
}

type Chars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// After a backslash: `\"`, `\'` and `\ ` are the character itself; any
/// other escape (`\t`, `\\`, `\x20`) is kept whole for the TSV decoder.
fn backslash(chars: &mut Chars, text: &mut String) {
    match chars.next() {
        Some((_, c @ ('"' | '\'' | ' '))) => text.push(c),
        Some((_, c)) => {
            text.push('\\');
            text.push(c);
        }
        None => text.push('\\'),
    }
}

/// Literal text up to the closing `'`; a backslash in it is a backslash.
fn single(chars: &mut Chars, text: &mut String) -> Result<(), String> {
    for (_, c) in chars.by_ref() {
        match c {
            '\'' => return Ok(()),
            '\\' => text.push_str("\\\\"),
            c => text.push(c),
        }
    }
    Err("unclosed ' quote".into())
}

/// Text up to the closing `"`, with the escapes of [`backslash`].
fn double(chars: &mut Chars, text: &mut String) -> Result<(), String> {
    while let Some((_, c)) = chars.next() {
        match c {
            '"' => return Ok(()),
            '\\' => backslash(chars, text),
            c => text.push(c),
        }
    }
    Err("unclosed \" quote".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        split(line).unwrap().into_iter().map(|w| w.text).collect()
    }

    #[test]
    fn quotes_group_words_and_escapes_stay_for_the_decoder() {
        assert_eq!(texts("put  a b"), ["put", "a", "b"]);
        assert_eq!(texts(r#"get "my key""#), ["get", "my key"]);
        assert_eq!(texts("get 'my key'"), ["get", "my key"]);
        assert_eq!(texts(r"get my\ key"), ["get", "my key"]);
        assert_eq!(texts(r#"get "say \"hi\"""#), ["get", r#"say "hi""#]);
        assert_eq!(texts(r"get a\tb"), ["get", r"a\tb"]);
        assert_eq!(
            texts(r"get 'a\tb'"),
            ["get", r"a\\tb"],
            "literal in single quotes"
        );
        assert_eq!(texts(r"get a\x20b"), ["get", r"a\x20b"]);
        assert_eq!(texts(r"get a\\b"), ["get", r"a\\b"]);
        assert_eq!(texts(r#"get pre"fix "'x'"#), ["get", "prefix x"]);
        assert_eq!(texts(r#"get """#), ["get", ""]);
        assert!(split("get \"open").is_err());
        assert!(split("get 'open").is_err());
        assert_eq!(split("put k v w").unwrap()[2].start, 6);
    }
}
