//! Comments and blank lines: everything of the source the IR does not hold.

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
    /// Byte offsets of the start of every line that is empty or only white space.
    pub blank_lines: Vec<u32>,
}

impl Trivia {
    /// Scan `source` for comments and blank lines.
    pub fn scan(source: &str) -> Trivia {
        let _ = source;
        Trivia::default() // filled in by the parser work
    }
}
