//! Synthetic expressions: what the checker builds from source expressions when a construct
//! means an assertion (`\matrix`, inline predicates). Every node carries the span of the
//! construct it stands for, so a failure is reported there.

use crate::syntax::{
    BinaryOp, Binder, Builtin, Expr, ExprKind, Ident, PermLit, Quantifier, QuantifierKind, Span,
    Type, TypeKind,
};

fn expr(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

pub fn int(n: u32, span: Span) -> Expr {
    expr(ExprKind::IntLit(n.into()), span)
}

pub fn null(span: Span) -> Expr {
    expr(ExprKind::Null, span)
}

pub fn read(span: Span) -> Expr {
    expr(ExprKind::PermLit(PermLit::Read), span)
}

pub fn bin(op: BinaryOp, lhs: Expr, rhs: Expr, span: Span) -> Expr {
    expr(
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    )
}

pub fn and(lhs: Expr, rhs: Expr, span: Span) -> Expr {
    bin(BinaryOp::And, lhs, rhs, span)
}

pub fn index(base: Expr, index: Expr, span: Span) -> Expr {
    expr(
        ExprKind::Index {
            base: Box::new(base),
            index: Box::new(index),
        },
        span,
    )
}

/// `base.length`
pub fn length(base: Expr, span: Span) -> Expr {
    expr(
        ExprKind::Field {
            base: Box::new(base),
            name: Ident {
                name: "length".to_string(),
                span,
            },
        },
        span,
    )
}

pub fn perm(loc: Expr, amount: Expr, span: Span) -> Expr {
    expr(
        ExprKind::Builtin {
            op: Builtin::Perm,
            args: vec![loc, amount],
        },
        span,
    )
}

/// `(kind int x, int y, ...; cond; body)`
pub fn forall(kind: QuantifierKind, binders: &[&str], cond: Expr, body: Expr, span: Span) -> Expr {
    let binders = binders
        .iter()
        .map(|b| Binder {
            ty: Type {
                kind: TypeKind::Int,
                span,
            },
            name: Ident {
                name: b.to_string(),
                span,
            },
            range: None,
            span,
        })
        .collect();
    expr(
        ExprKind::Quantifier(Box::new(Quantifier {
            kind,
            binders,
            cond: Some(cond),
            body,
        })),
        span,
    )
}

/// `base.name`.
pub fn field(base: Expr, name: &str, span: Span) -> Expr {
    expr(
        ExprKind::Field {
            base: Box::new(base),
            name: crate::syntax::Ident {
                name: name.to_string(),
                span,
            },
        },
        span,
    )
}

pub fn this(span: Span) -> Expr {
    expr(ExprKind::This, span)
}
