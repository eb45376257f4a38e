//! Front end: PVL text ⇄ IR.
//!
//! Entry points: [`parse`] (text → [`Parsed`]: IR + trivia + warnings, or syntax errors) and
//! [`print()`] (IR + trivia → text in the house style).
//!
//! Architecture invariants:
//! - Parsing never panics, whatever the bytes; every failure is a [`SyntaxError`] with a span.
//! - The grammar (`pvl.pest`, mirrored for speed by the parser's fast path, which gives up
//!   wherever it cannot follow the grammar exactly) is the only place that knows PVL's concrete
//!   syntax besides the printer; the rest of the crate sees only [`ir`].
//! - Comments are not in the IR. They are collected as [`Trivia`] by a scan of the source and
//!   re-interleaved by the printer by source position, so every comment survives `fmt`.

mod error;
pub mod ir;
mod parse;
mod print;
mod span;
mod trivia;

pub use error::{SyntaxError, SyntaxWarning};

/// The most digits an integer literal may have (E0107 beyond). Converting a decimal literal
/// to a big integer, back to text and into a Z3 numeral is quadratic in its length (a
/// 200,000-digit literal took 8 s to verify); 10,000 digits take milliseconds, and no kernel
/// needs more.
pub const MAX_LITERAL_DIGITS: usize = 10_000;
pub use ir::*;
pub use parse::{parse, parse_reference};
pub use print::{print, print_expr, print_stmt, print_type};
pub use span::line_col;
pub use trivia::{Comment, Trivia};

/// An IR node as JSON with every `"span"` removed: equality "spans aside" (the round-trip
/// property, and the Rust front end's check that its PVL reads back as what it lowered).
pub fn spanless<T: serde::Serialize>(ir: &T) -> serde_json::Value {
    fn strip(value: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .filter(|(key, _)| key != "span")
                    .map(|(key, v)| (key, strip(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(strip).collect()),
            other => other,
        }
    }
    strip(serde_json::to_value(ir).unwrap_or_default())
}

/// The result of parsing one source file.
#[derive(Clone, Debug)]
pub struct Parsed {
    pub program: Program,
    pub trivia: Trivia,
    pub warnings: Vec<SyntaxWarning>,
}
