//! Inline predicates (`inline resource p(params) = body;`) are macros: a call `p(args)` in an
//! assertion means `body` with the arguments for the parameters. Expanded before an assertion
//! is walked, so every later stage sees permissions and pure facts only.
//!
//! The substitution avoids capture: a binder of the body whose name an argument mentions is
//! renamed first, and parameters go through temporary names no source can write (`'` is not
//! an identifier character), so `p(b, a)` for parameters `(a, b)` swaps correctly. The
//! expansion carries the call's span (a failure is reported at the call); the arguments keep
//! their own. A chain of inline predicates deeper than [`DEPTH`] (a cycle) is left
//! unexpanded, which the walker refuses as unsupported.

use std::collections::BTreeSet;

use crate::syntax::{
    BinaryOp, Builtin, Expr, ExprKind, MethodBody, Modifier, Param, QuantifierKind, Span, TypeKind,
};

use super::program::ProgramInfo;

const DEPTH: usize = 32;

/// `e` with every inline predicate call expanded, or `None` when it has none.
pub fn expand(e: &Expr, program: &ProgramInfo<'_>) -> Option<Expr> {
    let mut any = false;
    e.visit(&mut |x| {
        if let ExprKind::Call { name, .. } = &x.kind {
            any |= inline_predicate(program, &name.name).is_some();
        }
    });
    if !any {
        return None;
    }
    let mut out = e.clone();
    expand_in(&mut out, program, 0);
    Some(out)
}

/// The declaration of the predicate `name` (a `resource`), if it is one.
fn predicate<'p>(program: &ProgramInfo<'p>, name: &str) -> Option<&'p crate::syntax::Method> {
    let m = program.routine(name)?.method;
    m.return_type
        .as_ref()
        .is_some_and(|t| t.kind == TypeKind::Resource)
        .then_some(m)
}

/// The parameters and body of the inline predicate `name`, if it is one.
pub fn inline_predicate<'p>(
    program: &ProgramInfo<'p>,
    name: &str,
) -> Option<(&'p [Param], &'p Expr)> {
    let m = predicate(program, name)?;
    match &m.body {
        MethodBody::Expr(body) if m.modifiers.contains(&Modifier::Inline) => {
            Some((&m.params, body))
        }
        _ => None,
    }
}

/// The body of the abstract predicate that `e` applies (`receiver.name(args)` or
/// `name(args)`) with the arguments for the parameters, for `what` (`fold`, `unfolding`, ..)
/// to work on; "unsupported" when `e` is no such application.
pub fn applied_body(
    e: &Expr,
    program: &ProgramInfo<'_>,
    what: &str,
) -> Result<Expr, super::expr::EncodeError> {
    use super::expr::unsupported;
    let Some((receiver, name, args)) = predicate_call(e) else {
        return Err(unsupported(
            format!("`{what}` of something other than a predicate"),
            e.span,
        ));
    };
    let Some((params, Some(body))) = abstract_predicate(program, name) else {
        return Err(unsupported(
            format!("`{what}` of this (only predicates with a body can be folded or unfolded)"),
            e.span,
        ));
    };
    if params.len() != args.len() {
        return Err(unsupported(
            "a predicate applied to the wrong number of arguments",
            e.span,
        ));
    }
    let body = match (receiver, program.routine(name).and_then(|r| r.class)) {
        (Some(r), Some(class)) => &with_receiver(body, program, class, params, r),
        (Some(r), None) => {
            return Err(unsupported(
                format!("a receiver for `{name}`, which is not a predicate of a class"),
                r.span,
            ))
        }
        (None, _) => body,
    };
    Ok(instantiate(params, body, args, e.span))
}

/// `receiver.name(args)` (or `name(args)`) when `e` is a call without ghost arguments.
pub fn predicate_call(e: &Expr) -> Option<(Option<&Expr>, &str, &[Expr])> {
    match &e.kind {
        ExprKind::Call {
            receiver,
            name,
            args,
            given,
            yields,
            ..
        } if given.is_empty() && yields.is_empty() => Some((receiver.as_deref(), &name.name, args)),
        _ => None,
    }
}

/// The body of a predicate of `class` (over `params`) as applied to `receiver`: `this` is
/// the receiver and a bare field name is the receiver's field (unless a parameter or binder
/// shadows it). Binders of the body that the receiver's names would be captured by are
/// renamed first.
pub fn with_receiver(
    body: &Expr,
    program: &ProgramInfo<'_>,
    class: &str,
    params: &[Param],
    receiver: &Expr,
) -> Expr {
    let mut b = body.clone();
    let mut names = BTreeSet::new();
    receiver.names(&mut names);
    rename_binders(&mut b, &names);
    let mut fields = BTreeSet::new();
    b.names(&mut fields);
    fields
        .retain(|f| program.field(class, f).is_some() && !params.iter().any(|p| p.name.name == *f));
    for f in &fields {
        b = b.substitute(f, &super::syn::field(receiver.clone(), f, receiver.span));
    }
    replace_this(&mut b, receiver);
    b
}

fn replace_this(e: &mut Expr, receiver: &Expr) {
    if matches!(e.kind, ExprKind::This) {
        *e = receiver.clone();
        return;
    }
    e.for_each_child_mut(&mut |c| replace_this(c, receiver));
}

/// `name(args)` when `e` is a call with no receiver and no ghost arguments.
pub fn plain_call(e: &Expr) -> Option<(&str, &[Expr])> {
    match predicate_call(e)? {
        (None, name, args) => Some((name, args)),
        (Some(_), _, _) => None,
    }
}

/// The expansion of `e` when it applies an inline predicate, scaled or not (`r()`,
/// `[1\2]r()`): what `fold`/`unfold` of it exhale and inhale again.
pub fn inline_application(e: &Expr, program: &ProgramInfo<'_>) -> Option<Expr> {
    let mut applied = e;
    while let ExprKind::Scaled { pred, .. } = &applied.kind {
        applied = pred;
    }
    let (name, _) = plain_call(applied)?;
    inline_predicate(program, name)?;
    expand(e, program)
}

fn expand_in(e: &mut Expr, program: &ProgramInfo<'_>, depth: usize) {
    if let ExprKind::Scaled { amount, pred } = &mut e.kind {
        let inline = matches!(pred.kind, ExprKind::Scaled { .. })
            || plain_call(pred).is_some_and(|(n, _)| inline_predicate(program, n).is_some());
        if inline && depth < DEPTH {
            expand_in(amount, program, depth);
            expand_in(pred, program, depth);
            let body = std::mem::replace(&mut **pred, Expr::name("", e.span));
            *e = scale(body, amount, program);
            return;
        }
    }
    e.for_each_child_mut(&mut |c| expand_in(c, program, depth));
    let Some((name, args)) = plain_call(e) else {
        return;
    };
    if depth >= DEPTH {
        return;
    }
    let Some((params, body)) = inline_predicate(program, name) else {
        return;
    };
    if params.len() != args.len() {
        return;
    }
    let mut b = instantiate(params, body, args, e.span);
    expand_in(&mut b, program, depth + 1);
    *e = b;
}

/// `e`, an expanded predicate body, at the fraction `p` of its permissions (`[p]r()`): every
/// permission amount multiplied by `p` (`Perm(l, q)` becomes `Perm(l, p * q)`) through `**`
/// and `&&`, the resource side of `==>`, both branches of `?:`, the bodies of `\let` and
/// `\forall*`; a nested scale multiplies. Pure facts stay as they are (a fraction of a
/// predicate states the same facts) and so does `Value(l)` (some positive amount either way).
/// What cannot be scaled here — an abstract predicate's instance, a thread or lock token —
/// stays wrapped in the scale, which the checker refuses as unsupported.
fn scale(e: Expr, p: &Expr, program: &ProgramInfo<'_>) -> Expr {
    let span = e.span;
    let times = |q: Expr| super::syn::bin(BinaryOp::Mul, p.clone(), q, span);
    let kind = match e.kind {
        ExprKind::Builtin {
            op: op @ (Builtin::Perm | Builtin::PointsTo),
            mut args,
        } if args.len() >= 2 => {
            let q = args.remove(1);
            args.insert(1, times(q));
            ExprKind::Builtin { op, args }
        }
        ExprKind::Binary {
            op: op @ (BinaryOp::Star | BinaryOp::And),
            lhs,
            rhs,
        } => ExprKind::Binary {
            op,
            lhs: Box::new(scale(*lhs, p, program)),
            rhs: Box::new(scale(*rhs, p, program)),
        },
        ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs,
            rhs,
        } => ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs,
            rhs: Box::new(scale(*rhs, p, program)),
        },
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => ExprKind::Cond {
            cond,
            then_expr: Box::new(scale(*then_expr, p, program)),
            else_expr: Box::new(scale(*else_expr, p, program)),
        },
        ExprKind::Let {
            ty,
            name,
            value,
            body,
        } => ExprKind::Let {
            ty,
            name,
            value,
            body: Box::new(scale(*body, p, program)),
        },
        ExprKind::Quantifier(mut q) if q.kind == QuantifierKind::ForallStar => {
            q.body = scale(q.body, p, program);
            ExprKind::Quantifier(q)
        }
        ExprKind::Scaled { amount, pred } => ExprKind::Scaled {
            amount: Box::new(times(*amount)),
            pred,
        },
        kind @ ExprKind::Builtin {
            op: Builtin::Idle | Builtin::Running | Builtin::Held | Builtin::Committed,
            ..
        } => wrapped(kind, p, span),
        kind @ ExprKind::Call { .. } => {
            let e = Expr { kind, span };
            let predicate =
                predicate_call(&e).is_some_and(|(_, n, _)| predicate(program, n).is_some());
            if predicate {
                wrapped(e.kind, p, span)
            } else {
                e.kind
            }
        }
        kind => kind,
    };
    Expr { kind, span }
}

/// `[p]e`, left for the checker to refuse.
fn wrapped(kind: ExprKind, p: &Expr, span: Span) -> ExprKind {
    ExprKind::Scaled {
        amount: Box::new(p.clone()),
        pred: Box::new(Expr { kind, span }),
    }
}

/// `body` with `args` for `params`, capture-avoiding (see the module docs); the body's nodes
/// carry `span`, the arguments their own.
pub fn instantiate(params: &[Param], body: &Expr, args: &[Expr], span: Span) -> Expr {
    let mut b = body.clone();
    let mut arg_names = BTreeSet::new();
    for a in args {
        a.names(&mut arg_names);
    }
    rename_binders(&mut b, &arg_names);
    let id = super::solver::declaration_id();
    let temp = |p: &Param| format!("{}'{id}", p.name.name);
    for p in params {
        b = b.substitute(&p.name.name, &Expr::name(&temp(p), span));
    }
    respan(&mut b, span);
    // A fraction parameter is bound by a `\let` of its type instead: the argument gets the
    // type's range as an obligation and the type's conversion (an int argument is a fraction
    // in the body). The walker sees through the `\let` (`LetScope`).
    let mut lets = Vec::new();
    for (p, a) in params.iter().zip(args) {
        if super::fraction::is_fraction(&p.ty.kind) {
            lets.push((p, a));
        } else {
            b = b.substitute(&temp(p), a);
        }
    }
    for (p, a) in lets.into_iter().rev() {
        b = Expr {
            kind: ExprKind::Let {
                ty: p.ty.clone(),
                name: crate::syntax::Ident {
                    name: temp(p),
                    span: p.name.span,
                },
                value: Box::new(a.clone()),
                body: Box::new(b),
            },
            span,
        };
    }
    b
}

/// The parameters and body (`None` for a bodiless one) of the abstract (not inline) predicate
/// `name`, if it is one.
pub fn abstract_predicate<'p>(
    program: &ProgramInfo<'p>,
    name: &str,
) -> Option<(&'p [Param], Option<&'p Expr>)> {
    let m = predicate(program, name)?;
    if m.modifiers.contains(&Modifier::Inline) {
        return None;
    }
    match &m.body {
        MethodBody::Expr(body) => Some((&m.params, Some(body))),
        MethodBody::Abstract => Some((&m.params, None)),
        MethodBody::Block(_) => None,
    }
}

/// Renames every binder (quantifier or `\let`) of `e` whose name is in `clash`.
fn rename_binders(e: &mut Expr, clash: &BTreeSet<String>) {
    match &mut e.kind {
        ExprKind::Quantifier(q) => {
            for k in 0..q.binders.len() {
                let old = q.binders[k].name.name.clone();
                if !clash.contains(&old) {
                    continue;
                }
                let id = super::solver::declaration_id();
                let new = Expr::name(&format!("{old}'{id}"), q.binders[k].name.span);
                for later in &mut q.binders[k + 1..] {
                    if let Some((lo, hi)) = &mut later.range {
                        *lo = lo.substitute(&old, &new);
                        *hi = hi.substitute(&old, &new);
                    }
                }
                if let Some(c) = &mut q.cond {
                    *c = c.substitute(&old, &new);
                }
                q.body = q.body.substitute(&old, &new);
                if let ExprKind::Name(id) = &new.kind {
                    q.binders[k].name.name = id.name.clone();
                }
            }
        }
        ExprKind::Let { name, body, .. } if clash.contains(&name.name) => {
            let id = super::solver::declaration_id();
            let new_name = format!("{}'{id}", name.name);
            **body = body.substitute(&name.name, &Expr::name(&new_name, name.span));
            name.name = new_name;
        }
        _ => {}
    }
    e.for_each_child_mut(&mut |c| rename_binders(c, clash));
}

fn respan(e: &mut Expr, span: Span) {
    e.span = span;
    e.for_each_child_mut(&mut |c| respan(c, span));
}
