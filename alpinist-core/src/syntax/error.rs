//! Syntax errors and warnings, with stable codes (E01xx, W01xx).
//!
//! Codes are part of the tool's interface (tests and users match on them): never renumber,
//! only add.

use super::span::Span;

#[derive(Clone, Debug, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum SyntaxError {
    /// The grammar could not go on: `expected` lists, in words, what would have been accepted.
    #[error("syntax error: expected {expected}, found {found}")]
    #[diagnostic(code(E0101))]
    Unexpected {
        expected: String,
        /// The offending token as written, or "end of file".
        found: String,
        #[label("here")]
        span: Span,
    },

    /// Brackets, prefix operators or statement keywords nested beyond what the parser accepts
    /// (the limit keeps every recursive pass over the tree within its stack).
    #[error("nesting too deep: more than {limit} levels")]
    #[diagnostic(
        code(E0102),
        help("split the expression or statement into smaller parts")
    )]
    TooDeep {
        limit: usize,
        #[label("this is nested too deeply")]
        span: Span,
    },

    /// A `gpuopt` keyword argument with a value outside its fixed set, e.g. `matrix_lin m X ..`.
    #[error("`gpuopt {annotation}`: the {what} must be {expected}, found `{found}`")]
    #[diagnostic(code(E0103))]
    GpuOptBadWord {
        annotation: &'static str,
        what: &'static str,
        expected: &'static str,
        found: String,
        #[label("expected {expected}")]
        span: Span,
    },

    /// A known `gpuopt` annotation whose arguments do not have the expected form.
    #[error("malformed `gpuopt {annotation}`: expected `{usage}`")]
    #[diagnostic(code(E0104))]
    GpuOptMalformed {
        annotation: String,
        usage: &'static str,
        #[label("arguments do not match")]
        span: Span,
    },

    /// `gpuopt` followed by a word that names no optimisation.
    #[error("unknown annotation `gpuopt {name}`: expected one of loop_unroll, iter_merge, matrix_lin, glob_to_reg, tile, fuse")]
    #[diagnostic(code(E0105))]
    GpuOptUnknown {
        name: String,
        #[label("unknown optimisation")]
        span: Span,
    },

    /// An integer literal longer than [`MAX_LITERAL_DIGITS`](super::MAX_LITERAL_DIGITS): its
    /// conversions (to a big integer, to text, to a Z3 numeral) grow quadratically.
    #[error("integer literal too long: {digits} digits, more than {limit}")]
    #[diagnostic(
        code(E0107),
        help("no program needs such a number; compute it from smaller ones")
    )]
    LiteralTooLong {
        digits: usize,
        limit: usize,
        #[label("this literal")]
        span: Span,
    },

    /// The source is larger than spans can address (4 GiB).
    #[error("source file too large ({len} bytes)")]
    #[diagnostic(code(E0106))]
    TooLarge { len: usize },
}

impl SyntaxError {
    /// Where the error is, if it has a place in the source.
    pub fn span(&self) -> Option<Span> {
        match self {
            SyntaxError::Unexpected { span, .. }
            | SyntaxError::TooDeep { span, .. }
            | SyntaxError::GpuOptBadWord { span, .. }
            | SyntaxError::GpuOptMalformed { span, .. }
            | SyntaxError::GpuOptUnknown { span, .. }
            | SyntaxError::LiteralTooLong { span, .. } => Some(*span),
            SyntaxError::TooLarge { .. } => None,
        }
    }

    /// The same error about a source that starts `offset` bytes later (errors found in a
    /// suffix of the file, see `parse`).
    pub(crate) fn shifted(mut self, offset: usize) -> SyntaxError {
        match &mut self {
            SyntaxError::Unexpected { span, .. }
            | SyntaxError::TooDeep { span, .. }
            | SyntaxError::GpuOptBadWord { span, .. }
            | SyntaxError::GpuOptMalformed { span, .. }
            | SyntaxError::GpuOptUnknown { span, .. }
            | SyntaxError::LiteralTooLong { span, .. } => {
                let by = offset as u32;
                *span = Span {
                    start: span.start + by,
                    end: span.end + by,
                };
            }
            SyntaxError::TooLarge { .. } => {}
        }
        self
    }

    /// The stable code, e.g. `"E0101"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            SyntaxError::Unexpected { .. } => "E0101",
            SyntaxError::TooDeep { .. } => "E0102",
            SyntaxError::GpuOptBadWord { .. } => "E0103",
            SyntaxError::GpuOptMalformed { .. } => "E0104",
            SyntaxError::GpuOptUnknown { .. } => "E0105",
            SyntaxError::TooLarge { .. } => "E0106",
            SyntaxError::LiteralTooLong { .. } => "E0107",
        }
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum SyntaxWarning {
    /// `a && b || c` or `a || b && c` (also with `**`) without parentheses: VerCors 1.x put
    /// these operators on one level and read them left to right, 2.x binds `&&`/`**` tighter.
    #[error("`&&` and `||` mixed without parentheses: VerCors 1.x read this differently")]
    #[diagnostic(code(W0101), severity(Warning))]
    MixedAndOr {
        #[label("add parentheses")]
        span: Span,
    },
}

impl SyntaxWarning {
    pub fn span(&self) -> Span {
        match self {
            SyntaxWarning::MixedAndOr { span } => *span,
        }
    }

    pub fn code_str(&self) -> &'static str {
        match self {
            SyntaxWarning::MixedAndOr { .. } => "W0101",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::Diagnostic;

    #[test]
    fn codes_agree_with_the_diagnostic_derive() {
        let span = Span::new(1, 2);
        let errors = [
            SyntaxError::Unexpected {
                expected: "`;`".into(),
                found: "`}`".into(),
                span,
            },
            SyntaxError::TooDeep { limit: 200, span },
            SyntaxError::GpuOptBadWord {
                annotation: "tile",
                what: "layout",
                expected: "`inter` or `intra`",
                found: "x".into(),
                span,
            },
            SyntaxError::GpuOptMalformed {
                annotation: "fuse".into(),
                usage: "gpuopt fuse F N;",
                span,
            },
            SyntaxError::GpuOptUnknown {
                name: "x".into(),
                span,
            },
            SyntaxError::TooLarge { len: 0 },
        ];
        for e in errors {
            let code = e.code().map(|c| c.to_string());
            assert_eq!(code.as_deref(), Some(e.code_str()));
        }
        let w = SyntaxWarning::MixedAndOr { span };
        assert_eq!(w.code().map(|c| c.to_string()).as_deref(), Some("W0101"));
    }
}
