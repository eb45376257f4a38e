//! Rust expressions → IR expressions: one precedence-climbing parser over token trees for
//! specifications and executable code alike.
//!
//! Specifications need operators Rust does not have (`==>`, `**`: found by spacing, as rustc
//! tokenises them into `==` `>` and `*` `*`), so they cannot go through `syn::Expr`; executable
//! expressions use the same parser (one mechanism) in [`Mode::Code`], which refuses the
//! specification-only forms and types every arithmetic operation (an unsigned one gets the
//! checker's extra "not below zero" obligation, see [`crate::verify::Int32::unsigned`]).
//! Operators bind as in PVL (`syntax::BinaryOp::precedence`), which orders the operators the
//! two languages share as Rust does.

use num_bigint::BigUint;
use proc_macro2::{Delimiter, Spacing, Span as RustSpan, TokenStream, TokenTree};

use crate::syntax::{
    BinaryOp, Binder, Builtin, Expr, ExprKind, Ident, PermLit, Quantifier, QuantifierKind, Span,
    Type, TypeKind, UnaryOp,
};

use super::lower::{Cx, RustTy, Var};

/// Where an expression stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// A contract, invariant, barrier clause or ghost code: integers are mathematical, and the
    /// specification forms (`==>`, `**`, `forall`, `perm!`, `old`, `result`) are allowed.
    Spec,
    /// Executable code: Rust's own operators, each typed.
    Code,
}

type Res<T> = Result<T, syn::Error>;

/// The tokens of one expression, consumed left to right.
struct Tokens {
    trees: Vec<TokenTree>,
    next: usize,
    /// Where "expected an expression" at the end points.
    end: RustSpan,
}

impl Tokens {
    fn new(stream: TokenStream, end: RustSpan) -> Tokens {
        Tokens {
            trees: stream.into_iter().collect(),
            next: 0,
            end,
        }
    }
    fn peek(&self) -> Option<&TokenTree> {
        self.trees.get(self.next)
    }
    fn peek_at(&self, k: usize) -> Option<&TokenTree> {
        self.trees.get(self.next + k)
    }
    fn bump(&mut self) -> Option<TokenTree> {
        let t = self.trees.get(self.next).cloned();
        self.next += 1;
        t
    }
    fn here(&self) -> RustSpan {
        self.peek().map_or(self.end, TokenTree::span)
    }
    fn punct(&self, k: usize, c: char) -> Option<Spacing> {
        match self.peek_at(k) {
            Some(TokenTree::Punct(p)) if p.as_char() == c => Some(p.spacing()),
            _ => None,
        }
    }
    fn ident(&self, k: usize) -> Option<String> {
        match self.peek_at(k) {
            Some(TokenTree::Ident(i)) => Some(i.to_string()),
            _ => None,
        }
    }
    fn group(&self, k: usize, d: Delimiter) -> Option<proc_macro2::Group> {
        match self.peek_at(k) {
            Some(TokenTree::Group(g)) if g.delimiter() == d => Some(g.clone()),
            _ => None,
        }
    }
}

/// Splits a token stream at its top-level commas (a trailing comma gives no empty part).
pub(super) fn split_commas(stream: TokenStream) -> Vec<TokenStream> {
    let mut parts = vec![TokenStream::new()];
    for t in stream {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(TokenStream::new()),
            _ => parts.last_mut().expect("one part").extend([t]),
        }
    }
    if parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// `lhs op rhs` spanning both operands: every operation has a span of its own (the unsigned
/// operations are named by span), unlike [`Expr::binary`]'s, which is its left operand's.
pub(super) fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    let span = lhs.span.to(rhs.span);
    Expr {
        span,
        ..Expr::binary(op, lhs, rhs)
    }
}

pub(super) fn int_lit(n: u64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::IntLit(BigUint::from(n)),
        span,
    }
}

impl Cx {
    /// Lowers a whole token stream as one expression.
    pub(super) fn expr_tokens(
        &mut self,
        stream: TokenStream,
        end: RustSpan,
        mode: Mode,
    ) -> Res<(Expr, RustTy)> {
        let mut t = Tokens::new(stream, end);
        let e = self.expr(&mut t, 0, mode)?;
        if let Some(extra) = t.peek() {
            return Err(syn::Error::new(
                extra.span(),
                "expected an operator or the end of the expression",
            ));
        }
        Ok(e)
    }

    /// The binary operator at the cursor, with the number of tokens it takes.
    fn peek_op(&self, t: &Tokens) -> Option<(BinaryOp, usize)> {
        use BinaryOp::*;
        let op = match t.peek() {
            Some(TokenTree::Punct(p)) => match p.as_char() {
                '=' if p.spacing() == Spacing::Joint && t.punct(1, '=').is_some() => {
                    // `==>`: rustc hands `==` then `>`; whether it marks the `==` as joined to
                    // the `>` varies (quote! does not), and `== >` means nothing else.
                    if t.punct(2, '>').is_some() {
                        (Implies, 3)
                    } else {
                        (Eq, 2)
                    }
                }
                '!' if p.spacing() == Spacing::Joint && t.punct(1, '=').is_some() => (Neq, 2),
                '<' if p.spacing() == Spacing::Joint && t.punct(1, '=').is_some() => (Le, 2),
                '>' if p.spacing() == Spacing::Joint && t.punct(1, '=').is_some() => (Ge, 2),
                '<' => (Lt, 1),
                '>' => (Gt, 1),
                '&' if p.spacing() == Spacing::Joint && t.punct(1, '&').is_some() => (And, 2),
                '|' if p.spacing() == Spacing::Joint && t.punct(1, '|').is_some() => (Or, 2),
                // `**` is no Rust token: two `*` (whose spacing quote! does not keep; a
                // dereference `* *r` is not supported in kernels either way).
                '*' if t.punct(1, '*').is_some() => (Star, 2),
                '+' => (Add, 1),
                '-' => (Sub, 1),
                '*' => (Mul, 1),
                '/' => (Div, 1),
                '%' => (Mod, 1),
                _ => return None,
            },
            _ => return None,
        };
        Some(op)
    }

    fn expr(&mut self, t: &mut Tokens, min_prec: u8, mode: Mode) -> Res<(Expr, RustTy)> {
        let (mut lhs, mut lty) = self.unary(t, mode)?;
        while let Some((op, len)) = self.peek_op(t) {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            let at = t.here();
            if mode == Mode::Code && matches!(op, BinaryOp::Implies | BinaryOp::Star) {
                return Err(syn::Error::new(
                    at,
                    format!(
                        "`{}` belongs to specifications; executable code has no such operator",
                        op.symbol()
                    ),
                ));
            }
            for _ in 0..len {
                let tok = t.bump().expect("peeked");
                self.spans.at(tok.span());
            }
            let next = match op.assoc() {
                crate::syntax::Assoc::Right => prec,
                _ => prec + 1,
            };
            let (rhs, rty) = self.expr(t, next, mode)?;
            let ty = self.combine(op, &lhs, &lty, &rhs, &rty);
            lhs = binary(op, lhs, rhs);
            if mode == Mode::Code
                && matches!(
                    op,
                    BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod
                )
                && ty.is_unsigned()
            {
                self.unsigned.insert(lhs.span);
            }
            lty = ty;
        }
        Ok((lhs, lty))
    }

    /// The type of `lhs op rhs`; an operand of a type not yet known takes the other's.
    fn combine(
        &mut self,
        op: BinaryOp,
        lhs: &Expr,
        lty: &RustTy,
        rhs: &Expr,
        rty: &RustTy,
    ) -> RustTy {
        use BinaryOp::*;
        match op {
            Add | Sub | Mul | Div | Mod | Eq | Neq | Lt | Le | Gt | Ge => {
                let ty = self.unify(lhs, lty, rhs, rty);
                if matches!(op, Add | Sub | Mul | Div | Mod) {
                    ty
                } else {
                    RustTy::Bool
                }
            }
            _ => RustTy::Bool,
        }
    }

    /// The common integer type of two operands: where one side's type is not known yet, its
    /// locals take the other's (or, both unknown, are linked: one type for all of them).
    pub(super) fn unify(&mut self, a: &Expr, aty: &RustTy, b: &Expr, bty: &RustTy) -> RustTy {
        match (aty, bty) {
            (RustTy::Unknown, RustTy::Unknown) => {
                let (mut ra, mut rb) = (Vec::new(), Vec::new());
                self.unknown_roots(a, &mut ra);
                self.unknown_roots(b, &mut rb);
                self.link(&ra, &rb);
                RustTy::Unknown
            }
            (RustTy::Unknown, t) => {
                self.refine(a, t);
                t.clone()
            }
            (t, RustTy::Unknown) => {
                self.refine(b, t);
                t.clone()
            }
            (t, _) => t.clone(),
        }
    }

    /// Records that the locals of unknown type that `e`'s type comes from have type `ty` (for
    /// the next lowering pass).
    pub(super) fn refine(&mut self, e: &Expr, ty: &RustTy) {
        if !ty.is_integer() || *ty == RustTy::Unknown {
            return;
        }
        let mut roots = Vec::new();
        self.unknown_roots(e, &mut roots);
        for r in roots {
            self.refined.insert(r, ty.clone());
        }
    }

    /// The locals of unknown integer type whose type is `e`'s type: `k` in `k`, `k + 1`, `-k`,
    /// `if c { k } else { 0 }` (not in `a[k]`, whose type is the array's).
    pub(super) fn unknown_roots(&self, e: &Expr, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Name(id)
                if self
                    .vars
                    .get(&id.name)
                    .is_some_and(|v| v.ty == RustTy::Unknown) =>
            {
                out.push(id.name.clone())
            }
            ExprKind::Binary {
                op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod,
                lhs,
                rhs,
            } => {
                self.unknown_roots(lhs, out);
                self.unknown_roots(rhs, out);
            }
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => self.unknown_roots(operand, out),
            ExprKind::Cond {
                then_expr,
                else_expr,
                ..
            } => {
                self.unknown_roots(then_expr, out);
                self.unknown_roots(else_expr, out);
            }
            _ => {}
        }
    }

    /// The locals in `a` and in `b` have one type.
    pub(super) fn link(&mut self, a: &[String], b: &[String]) {
        let all: Vec<&String> = a.iter().chain(b).collect();
        for pair in all.windows(2) {
            self.links.push((pair[0].clone(), pair[1].clone()));
        }
    }

    fn unary(&mut self, t: &mut Tokens, mode: Mode) -> Res<(Expr, RustTy)> {
        if t.punct(0, '!').is_some() {
            let at = self.spans.at(t.bump().expect("peeked").span());
            let (e, _) = self.unary(t, mode)?;
            return Ok((
                Expr {
                    span: at.to(e.span),
                    kind: ExprKind::Unary {
                        op: UnaryOp::Not,
                        operand: Box::new(e),
                    },
                },
                RustTy::Bool,
            ));
        }
        if t.punct(0, '-').is_some() {
            let at = self.spans.at(t.bump().expect("peeked").span());
            let (e, ty) = self.unary(t, mode)?;
            if mode == Mode::Code && ty.is_unsigned() {
                return Err(self
                    .spans
                    .error(e.span, "an unsigned value cannot be negated"));
            }
            let e = Expr {
                span: at.to(e.span),
                kind: ExprKind::Unary {
                    op: UnaryOp::Neg,
                    operand: Box::new(e),
                },
            };
            return Ok((e, ty));
        }
        if t.punct(0, '&').is_some() {
            // `&xs`: a reference means the value it refers to.
            t.bump();
            if t.ident(0).as_deref() == Some("mut") {
                t.bump();
            }
            return self.unary(t, mode);
        }
        let primary = self.primary(t, mode)?;
        self.postfix(t, primary, mode)
    }

    fn primary(&mut self, t: &mut Tokens, mode: Mode) -> Res<(Expr, RustTy)> {
        let Some(tok) = t.peek().cloned() else {
            return Err(syn::Error::new(t.end, "expected an expression"));
        };
        match tok {
            TokenTree::Literal(lit) => {
                t.bump();
                let span = self.spans.at(lit.span());
                match syn::Lit::new(lit.clone()) {
                    syn::Lit::Int(i) => {
                        let value: BigUint = i.base10_digits().parse().map_err(|_| {
                            syn::Error::new(lit.span(), "an integer literal out of range")
                        })?;
                        let ty = match i.suffix() {
                            "" => RustTy::Unknown,
                            s => RustTy::from_name(s).ok_or_else(|| {
                                syn::Error::new(lit.span(), format!("integers of type `{s}`"))
                            })?,
                        };
                        Ok((
                            Expr {
                                kind: ExprKind::IntLit(value),
                                span,
                            },
                            ty,
                        ))
                    }
                    _ => Err(syn::Error::new(
                        lit.span(),
                        "only integer and boolean literals are supported in kernels",
                    )),
                }
            }
            TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => {
                t.bump();
                self.spans.at(g.span_open());
                if split_commas(g.stream()).len() > 1 {
                    return Err(syn::Error::new(
                        g.span(),
                        "tuples are not supported in kernels",
                    ));
                }
                let (mut e, ty) = self.expr_tokens(g.stream(), g.span_close(), mode)?;
                let close = self.spans.at(g.span_close());
                e.span = e.span.to(close);
                Ok((e, ty))
            }
            TokenTree::Ident(id) => {
                let word = id.to_string();
                t.bump();
                match word.as_str() {
                    "true" | "false" => Ok((
                        Expr {
                            kind: ExprKind::BoolLit(word == "true"),
                            span: self.spans.at(id.span()),
                        },
                        RustTy::Bool,
                    )),
                    "if" => self.conditional(t, id.span(), mode),
                    "result" if mode == Mode::Spec && !self.vars.contains_key("result") => Ok((
                        Expr {
                            kind: ExprKind::Result,
                            span: self.spans.at(id.span()),
                        },
                        self.result.clone(),
                    )),
                    _ if t.punct(0, '!').is_some() => self.macro_call(t, id, mode),
                    _ if t.punct(0, ':').is_some() => Err(syn::Error::new(
                        id.span(),
                        "paths are not supported in kernel expressions",
                    )),
                    _ if t.group(0, Delimiter::Parenthesis).is_some() => self.call(t, id, mode),
                    _ => {
                        let span = self.spans.at(id.span());
                        let var = self.vars.get(&word);
                        if mode == Mode::Code && var.is_some_and(|v| v.ghost) {
                            return Err(syn::Error::new(
                                id.span(),
                                format!("`{word}` is ghost: only specifications and `ghost!` code use it"),
                            ));
                        }
                        let ty = var.map_or(RustTy::Unknown, |v| v.ty.clone());
                        Ok((Expr::name(&word, span), ty))
                    }
                }
            }
            other => Err(syn::Error::new(other.span(), "expected an expression")),
        }
    }

    /// `if c { a } else { b }` as a value: `c ? a : b`.
    fn conditional(&mut self, t: &mut Tokens, at: RustSpan, mode: Mode) -> Res<(Expr, RustTy)> {
        let start = self.spans.at(at);
        let mut cond = TokenStream::new();
        while let Some(tok) = t.peek() {
            if matches!(tok, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace) {
                break;
            }
            cond.extend([t.bump().expect("peeked")]);
        }
        let (cond, _) = self.expr_tokens(cond, t.here(), mode)?;
        let (then_expr, tty) = self.braced(t, mode)?;
        if t.ident(0).as_deref() != Some("else") {
            return Err(syn::Error::new(
                t.here(),
                "an `if` used as a value needs an `else` branch",
            ));
        }
        self.spans.at(t.bump().expect("peeked").span());
        let (else_expr, ety) = if t.ident(0).as_deref() == Some("if") {
            let kw = t.bump().expect("peeked").span();
            self.conditional(t, kw, mode)?
        } else {
            self.braced(t, mode)?
        };
        let ty = self.unify(&then_expr, &tty, &else_expr, &ety);
        Ok((
            Expr {
                span: start.to(else_expr.span),
                kind: ExprKind::Cond {
                    cond: Box::new(cond),
                    then_expr: Box::new(then_expr),
                    else_expr: Box::new(else_expr),
                },
            },
            ty,
        ))
    }

    /// `{ e }`: a block holding one expression.
    fn braced(&mut self, t: &mut Tokens, mode: Mode) -> Res<(Expr, RustTy)> {
        let Some(g) = t.group(0, Delimiter::Brace) else {
            return Err(syn::Error::new(t.here(), "expected `{ value }`"));
        };
        t.bump();
        let open = self.spans.at(g.span_open());
        let (mut e, ty) = self.expr_tokens(g.stream(), g.span_close(), mode)?;
        let close = self.spans.at(g.span_close());
        e.span = open.to(e.span).to(close);
        Ok((e, ty))
    }

    /// `perm!(location, amount)`.
    fn macro_call(
        &mut self,
        t: &mut Tokens,
        id: proc_macro2::Ident,
        mode: Mode,
    ) -> Res<(Expr, RustTy)> {
        let word = id.to_string();
        t.bump(); // `!`
        let Some(g) = t.peek().cloned().and_then(|x| match x {
            TokenTree::Group(g) => Some(g),
            _ => None,
        }) else {
            return Err(syn::Error::new(id.span(), "expected the macro's arguments"));
        };
        t.bump();
        if word != "perm" {
            return Err(syn::Error::new(
                id.span(),
                format!("`{word}!` is not known in kernel expressions (`perm!` is)"),
            ));
        }
        if mode == Mode::Code {
            return Err(syn::Error::new(
                id.span(),
                "`perm!` belongs to specifications, not to executable code",
            ));
        }
        let start = self.spans.at(id.span());
        self.spans.at(g.span_open());
        let parts = split_commas(g.stream());
        if parts.len() != 2 {
            return Err(syn::Error::new(
                g.span(),
                "`perm!` takes a location and an amount: `perm!(a[i], 1/2)`, `perm!(x, write)`",
            ));
        }
        let mut parts = parts.into_iter();
        let (location, _) = self.expr_tokens(parts.next().expect("two"), g.span_close(), mode)?;
        let amount_tokens = parts.next().expect("two");
        let mut amount_t = Tokens::new(amount_tokens.clone(), g.span_close());
        let amount = match amount_t.ident(0).as_deref() {
            Some(w @ ("write" | "read" | "none")) if amount_t.trees.len() == 1 => {
                let span = self.spans.at(amount_t.bump().expect("peeked").span());
                Expr {
                    kind: ExprKind::PermLit(match w {
                        "write" => PermLit::Write,
                        "read" => PermLit::Read,
                        _ => PermLit::None,
                    }),
                    span,
                }
            }
            _ => fraction(self.expr_tokens(amount_tokens, g.span_close(), mode)?.0),
        };
        let close = self.spans.at(g.span_close());
        Ok((
            Expr {
                kind: ExprKind::Builtin {
                    op: Builtin::Perm,
                    args: vec![location, amount],
                },
                span: start.to(close),
            },
            RustTy::Bool,
        ))
    }

    /// `f(args)`, and the specification functions `old(e)`, `forall(|i: T| ..)`, `exists(..)`.
    fn call(&mut self, t: &mut Tokens, id: proc_macro2::Ident, mode: Mode) -> Res<(Expr, RustTy)> {
        let word = id.to_string();
        let g = t.group(0, Delimiter::Parenthesis).expect("peeked");
        t.bump();
        let spec_only = matches!(word.as_str(), "old" | "forall" | "exists");
        if spec_only && mode == Mode::Code {
            return Err(syn::Error::new(
                id.span(),
                format!("`{word}` belongs to specifications, not to executable code"),
            ));
        }
        if word == "Perm" || word == "PointsTo" {
            return Err(syn::Error::new(
                id.span(),
                "write permissions in Rust spelling: `perm!(a[i], 1/2)`, `perm!(x, write)`",
            ));
        }
        let start = self.spans.at(id.span());
        self.spans.at(g.span_open());
        let (kind, ty) = match word.as_str() {
            "old" => {
                let (e, ty) = self.expr_tokens(g.stream(), g.span_close(), mode)?;
                (ExprKind::Old(Box::new(e)), ty)
            }
            "forall" | "exists" => {
                let q = self.quantifier(&word, g.stream(), g.span_close())?;
                (ExprKind::Quantifier(Box::new(q)), RustTy::Bool)
            }
            _ => {
                let mut args = Vec::new();
                for part in split_commas(g.stream()) {
                    args.push(self.expr_tokens(part, g.span_close(), mode)?.0);
                }
                let ty = self
                    .functions
                    .get(&word)
                    .cloned()
                    .unwrap_or(RustTy::Unknown);
                (
                    ExprKind::Call {
                        receiver: None,
                        name: Ident {
                            name: word.clone(),
                            span: start,
                        },
                        type_args: Vec::new(),
                        args,
                        given: Vec::new(),
                        yields: Vec::new(),
                    },
                    ty,
                )
            }
        };
        let close = self.spans.at(g.span_close());
        Ok((
            Expr {
                kind,
                span: start.to(close),
            },
            ty,
        ))
    }

    /// The inside of `forall(|i: usize, j: usize| body)`: an unsigned binder ranges over the
    /// non-negative integers; `forall(|i| c ==> b)` keeps `c` as the quantifier's condition.
    fn quantifier(&mut self, word: &str, stream: TokenStream, end: RustSpan) -> Res<Quantifier> {
        let mut t = Tokens::new(stream, end);
        let bar = |t: &Tokens| t.punct(0, '|').is_some();
        if !bar(&t) {
            return Err(syn::Error::new(
                t.here(),
                format!("`{word}` takes a closure: `{word}(|i: usize| i < n ==> ..)`"),
            ));
        }
        self.spans.at(t.bump().expect("peeked").span());
        let mut binders = Vec::new();
        let mut conds = Vec::new();
        let mut shadowed = Vec::new();
        while !bar(&t) {
            let Some(TokenTree::Ident(n)) = t.bump() else {
                return Err(syn::Error::new(t.here(), "expected a binder name"));
            };
            if t.punct(0, ':').is_none() {
                return Err(syn::Error::new(
                    n.span(),
                    "a quantified variable needs its type: `|i: usize|`",
                ));
            }
            t.bump();
            let Some(TokenTree::Ident(ty_name)) = t.bump() else {
                return Err(syn::Error::new(t.here(), "expected an integer type"));
            };
            let rust_ty = RustTy::from_name(&ty_name.to_string())
                .filter(RustTy::is_integer)
                .ok_or_else(|| {
                    syn::Error::new(ty_name.span(), "quantified variables are integers")
                })?;
            let span = self.spans.at(n.span());
            let ty_span = self.spans.at(ty_name.span());
            let name_s = n.to_string();
            if rust_ty.is_unsigned() {
                conds.push(binary(
                    BinaryOp::Le,
                    int_lit(0, span),
                    Expr::name(&name_s, span),
                ));
            }
            binders.push(Binder {
                ty: Type {
                    kind: TypeKind::Int,
                    span: ty_span,
                },
                name: Ident {
                    name: name_s.clone(),
                    span,
                },
                range: None,
                span: span.to(ty_span),
            });
            shadowed.push((
                name_s.clone(),
                self.vars.insert(
                    name_s,
                    Var {
                        ty: rust_ty,
                        mutable: false,
                        ghost: true,
                    },
                ),
            ));
            if t.punct(0, ',').is_some() {
                t.bump();
            }
        }
        self.spans.at(t.bump().expect("peeked").span());
        let mut rest = TokenStream::new();
        while let Some(x) = t.bump() {
            rest.extend([x]);
        }
        let body = self.expr_tokens(rest, end, Mode::Spec);
        for (n, old) in shadowed.into_iter().rev() {
            match old {
                Some(v) => self.vars.insert(n, v),
                None => self.vars.remove(&n),
            };
        }
        let (body, _) = body?;
        let (guard, body) = match body.kind {
            ExprKind::Binary {
                op: BinaryOp::Implies,
                lhs,
                rhs,
            } if word == "forall" => (Some(*lhs), *rhs),
            kind => (
                None,
                Expr {
                    kind,
                    span: body.span,
                },
            ),
        };
        let cond = conds
            .into_iter()
            .chain(guard)
            .reduce(|a, b| binary(BinaryOp::And, a, b));
        let (cond, body) = match (word, cond) {
            // `exists i >= 0. b` is `\exists int i; 0 <= i && b`.
            ("exists", Some(c)) => (None, binary(BinaryOp::And, c, body)),
            (_, c) => (c, body),
        };
        let kind = match word {
            "exists" => QuantifierKind::Exists,
            _ if body.holds_permission() => QuantifierKind::ForallStar,
            _ => QuantifierKind::Forall,
        };
        Ok(Quantifier {
            kind,
            binders,
            cond,
            body,
        })
    }

    fn postfix(
        &mut self,
        t: &mut Tokens,
        first: (Expr, RustTy),
        mode: Mode,
    ) -> Res<(Expr, RustTy)> {
        let (mut e, mut ty) = first;
        loop {
            if let Some(g) = t.group(0, Delimiter::Bracket) {
                t.bump();
                self.spans.at(g.span_open());
                let (index, ity) = self.expr_tokens(g.stream(), g.span_close(), mode)?;
                if ity == RustTy::Unknown {
                    self.refine(&index, &RustTy::Usize);
                }
                let close = self.spans.at(g.span_close());
                ty = match ty {
                    RustTy::Slice(elem) | RustTy::Seq(elem) => *elem,
                    _ => RustTy::Unknown,
                };
                e = Expr {
                    span: e.span.to(close),
                    kind: ExprKind::Index {
                        base: Box::new(e),
                        index: Box::new(index),
                    },
                };
            } else if t.punct(0, '.').is_some() && t.punct(1, '.').is_none() {
                t.bump();
                let Some(member) = t.ident(0) else {
                    return Err(syn::Error::new(
                        t.here(),
                        "expected a method name after `.`",
                    ));
                };
                let member_span = t.here();
                t.bump();
                let empty_call = t
                    .group(0, Delimiter::Parenthesis)
                    .is_some_and(|g| g.stream().is_empty());
                if member != "len" || !empty_call {
                    let hint = if member == "length" {
                        " (write `a.len()`)"
                    } else {
                        ""
                    };
                    return Err(syn::Error::new(
                        member_span,
                        format!("`.{member}` is not supported in kernels; only `.len()` is{hint}"),
                    ));
                }
                let g = t.group(0, Delimiter::Parenthesis).expect("peeked");
                t.bump();
                let at = self.spans.at(member_span);
                self.spans.at(g.span_open());
                let close = self.spans.at(g.span_close());
                let span = e.span.to(close);
                e = match ty {
                    RustTy::Seq(_) => Expr {
                        kind: ExprKind::Length(Box::new(e)),
                        span,
                    },
                    _ => Expr {
                        kind: ExprKind::Field {
                            base: Box::new(e),
                            name: Ident {
                                name: "length".into(),
                                span: at,
                            },
                        },
                        span,
                    },
                };
                ty = RustTy::Usize;
            } else if t.ident(0).as_deref() == Some("as") {
                let at = t.here();
                if mode == Mode::Code {
                    return Err(syn::Error::new(
                        at,
                        "casts are not supported in kernel code yet (they may change the value)",
                    ));
                }
                t.bump();
                let Some(TokenTree::Ident(target)) = t.bump() else {
                    return Err(syn::Error::new(at, "expected a type after `as`"));
                };
                // Integers in specifications are mathematical: a cast changes nothing.
                ty = RustTy::from_name(&target.to_string()).unwrap_or(RustTy::Unknown);
            } else {
                return Ok((e, ty));
            }
        }
    }
}

/// `1/2` as a permission amount is the fraction `1\2`.
fn fraction(e: Expr) -> Expr {
    match e.kind {
        ExprKind::Binary {
            op: BinaryOp::Div,
            lhs,
            rhs,
        } => Expr {
            kind: ExprKind::Binary {
                op: BinaryOp::FracDiv,
                lhs,
                rhs,
            },
            span: e.span,
        },
        kind => Expr { kind, span: e.span },
    }
}
