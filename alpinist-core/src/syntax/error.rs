//! Syntax errors and warnings, with stable codes (E01xx, W01xx).

use super::span::Span;

#[derive(Clone, Debug, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum SyntaxError {
    #[error("syntax error: expected {expected}")]
    #[diagnostic(code(E0101))]
    Unexpected {
        expected: String,
        #[label("here")]
        span: Span,
    },
}

#[derive(Clone, Debug, PartialEq, thiserror::Error, miette::Diagnostic)]
pub enum SyntaxWarning {
    #[error("`&&` and `||` mixed without parentheses: VerCors 1.x read this differently")]
    #[diagnostic(code(W0101), severity(Warning))]
    MixedAndOr {
        #[label("add parentheses")]
        span: Span,
    },
}
