//! Comments and blank lines: everything of the source the IR does not hold.
//!
//! [`Trivia::scan`] recognises comments exactly as the grammar's `COMMENT` rule does (PVL has
//! no string literals, so a `//` or `/*` outside a comment always starts one): `//` runs to the
//! end of the line (the newline is not part of it), `/*` to the first `*/`, and a `//` inside a
//! block comment is part of that block comment. An unterminated `/*` is a syntax error for the
//! parser; the scan still returns it as one comment running to the end of the file. The bare
//! VerCors 1.x test markers `[/expect K]` and `[/end]` are comments too.

use super::span::Span;

/// One comment, its full text including the `//` or `/* */` delimiters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    pub text: String,
    pub span: Span,
    /// Nothing but white space precedes it on its line.
    pub own_line: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trivia {
    /// In source order.
    pub comments: Vec<Comment>,
    /// Byte offsets of the start of every line that is empty or only white space (lines inside
    /// a block comment are part of the comment, not blank).
    pub blank_lines: Vec<u32>,
}

impl Trivia {
    /// Scan `source` for comments and blank lines, in one linear pass.
    pub fn scan(source: &str) -> Trivia {
        let bytes = source.as_bytes();
        let mut trivia = Trivia::default();
        let mut line_start = 0usize;
        // Only white space seen since `line_start`.
        let mut line_blank = true;
        let mut i = 0usize;
        while i < bytes.len() {
            match bytes[i] {
                b'\n' => {
                    if line_blank {
                        trivia.blank_lines.push(line_start as u32);
                    }
                    i += 1;
                    line_start = i;
                    line_blank = true;
                }
                b'/' if matches!(bytes.get(i + 1), Some(b'/') | Some(b'*')) => {
                    let end = if bytes[i + 1] == b'/' {
                        memchr_newline(bytes, i)
                    } else {
                        find_block_end(bytes, i + 2)
                    };
                    trivia.comments.push(Comment {
                        // Both ends are ASCII delimiters or the end of the text, hence char
                        // boundaries.
                        text: source[i..end].to_string(),
                        span: Span::new(i, end),
                        own_line: line_blank,
                    });
                    // A block comment may span lines: the line it ends on starts inside it.
                    if let Some(last_newline) = bytes[i..end].iter().rposition(|&b| b == b'\n') {
                        line_start = i + last_newline + 1;
                    }
                    line_blank = false;
                    i = end;
                }
                b'[' if test_marker_len(&bytes[i..]).is_some() => {
                    let end = i + test_marker_len(&bytes[i..]).unwrap_or(1);
                    trivia.comments.push(Comment {
                        text: source[i..end].to_string(),
                        span: Span::new(i, end),
                        own_line: line_blank,
                    });
                    line_blank = false;
                    i = end;
                }
                b' ' | b'\t' | b'\r' | b'\x0C' => i += 1,
                _ => {
                    line_blank = false;
                    i += 1;
                }
            }
        }
        trivia
    }
}

/// The length of a bare 1.x test marker `[/expect K]` or `[/end]` at the start of `bytes`.
fn test_marker_len(bytes: &[u8]) -> Option<usize> {
    if bytes.starts_with(b"[/end]") {
        return Some(6);
    }
    if !bytes.starts_with(b"[/expect") {
        return None;
    }
    let close = bytes.iter().position(|&b| b == b']' || b == b'\n')?;
    (bytes[close] == b']').then_some(close + 1)
}

/// The offset of the `\n` ending the line that contains `from`, or the end of the text.
fn memchr_newline(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| from + p)
}

/// The offset just after the `*/` closing a block comment whose body starts at `from`.
fn find_block_end(bytes: &[u8], from: usize) -> usize {
    let mut j = from;
    while j + 1 < bytes.len() {
        if bytes[j] == b'*' && bytes[j + 1] == b'/' {
            return j + 2;
        }
        j += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(t: &Trivia) -> Vec<&str> {
        t.comments.iter().map(|c| c.text.as_str()).collect()
    }

    #[test]
    fn finds_line_and_block_comments_in_order() {
        let src = "//:: verdict Pass\nint x; // trailing\n/* a // not separate */ int y;\n";
        let t = Trivia::scan(src);
        assert_eq!(
            texts(&t),
            [
                "//:: verdict Pass",
                "// trailing",
                "/* a // not separate */"
            ]
        );
        assert!(t.comments[0].own_line);
        assert!(!t.comments[1].own_line);
        assert!(t.comments[2].own_line);
        for c in &t.comments {
            assert_eq!(&src[c.span.range()], c.text);
        }
    }

    #[test]
    fn block_comment_markers_inline() {
        let src = "x = /*[/expect arrayBounds]*/ a[1];";
        let t = Trivia::scan(src);
        assert_eq!(texts(&t), ["/*[/expect arrayBounds]*/"]);
        assert!(!t.comments[0].own_line);
    }

    #[test]
    fn blank_lines_are_recorded_but_not_inside_comments() {
        let src = "a\n\n  \t\n/*\n\n*/\nb\n";
        let t = Trivia::scan(src);
        assert_eq!(t.blank_lines, vec![2, 3]);
    }

    #[test]
    fn comment_after_block_comment_on_same_line_is_not_own_line() {
        let src = "  /* a\n b */ // c\n";
        let t = Trivia::scan(src);
        assert_eq!(texts(&t), ["/* a\n b */", "// c"]);
        assert!(t.comments[0].own_line);
        assert!(!t.comments[1].own_line);
    }

    #[test]
    fn unterminated_block_comment_runs_to_end() {
        let t = Trivia::scan("x /* never closed ü");
        assert_eq!(texts(&t), ["/* never closed ü"]);
        let t = Trivia::scan("/*/");
        assert_eq!(texts(&t), ["/*/"]);
    }

    #[test]
    fn bare_test_markers_are_comments() {
        let t = Trivia::scan("requires [/expect perm]x[/end] == 1;\n[/expect no close\n");
        assert_eq!(texts(&t), ["[/expect perm]", "[/end]"]);
    }

    #[test]
    fn slash_star_slash_is_not_closed_by_its_own_star() {
        let t = Trivia::scan("/*/ x */");
        assert_eq!(texts(&t), ["/*/ x */"]);
    }
}
