//! Positions of IR nodes lowered from Rust tokens.
//!
//! The IR's [`Span`] is a byte range into one source text; a kernel written in Rust has no such
//! text (rustc hands the macro tokens, and their line and column are not available on stable
//! Rust outside rustc). So the lowering numbers the tokens it consumes, in source order: the IR
//! span `k..k + 1` is the k-th token, and a node covering tokens i..=j has the span `i..j + 1`.
//! Joining spans ([`Span::to`]) keeps working because the numbering follows the source order.
//! Token 0 is the kernel's name, which is also where a span the checker made up (`0..0`)
//! points.

use proc_macro2::{Span as RustSpan, TokenStream, TokenTree};

use crate::syntax::Span;

/// The Rust span of every token the lowering consumed, in the order consumed.
#[derive(Clone, Default)]
pub struct SpanMap {
    tokens: Vec<RustSpan>,
}

impl SpanMap {
    /// Numbers the next token.
    pub fn at(&mut self, span: RustSpan) -> Span {
        self.tokens.push(span);
        let k = self.tokens.len() - 1;
        Span::new(k, k + 1)
    }

    /// The Rust spans of the first and the last token an IR span covers.
    pub fn rust(&self, span: Span) -> (RustSpan, RustSpan) {
        let Some(last) = self.tokens.len().checked_sub(1) else {
            return (RustSpan::call_site(), RustSpan::call_site());
        };
        let first = (span.start as usize).min(last);
        let end = (span.end as usize).saturating_sub(1).clamp(first, last);
        (self.tokens[first], self.tokens[end])
    }

    /// An error underlining the tokens of an IR span (rustc shows the range from the first to
    /// the last: `syn::Error::new_spanned` keeps both ends).
    pub fn error(&self, span: Span, message: impl std::fmt::Display) -> syn::Error {
        let (first, last) = self.rust(span);
        let ends: TokenStream = [first, last]
            .into_iter()
            .map(|s| TokenTree::Ident(proc_macro2::Ident::new("x", s)))
            .collect();
        syn::Error::new_spanned(ends, message)
    }
}
