//! Processes in canonical form, their interleavings, and the relation "some interleaving
//! leads from these values to those" that `create` assumes and the contract checks use.

use std::collections::BTreeSet;

use crate::syntax::*;

use super::build::{eq, join, name_expr, over_fields};
use super::decl::Model;

/// A process in canonical form (see `models`'s comment): a `Seq` has no `empty` and no `Seq`
/// inside and is never of length one (`Seq([])` is `empty`); a `Par` has at least two
/// branches, none `empty` or `Par`, ordered by shape (stably, so same-shape branches keep the
/// order they were written in).
#[derive(Clone, Debug)]
pub(super) enum Proc {
    Act { name: String, args: Vec<Expr> },
    Seq(Vec<Proc>),
    Par(Vec<Proc>),
}

/// One order of a process's actions: each with its arguments.
pub(super) type Run = Vec<(String, Vec<Expr>)>;

/// How many interleavings of a process the relations spell out; a process with more is not
/// lowered (E0227).
pub(super) const MAX_INTERLEAVINGS: usize = 64;

impl Proc {
    pub(super) fn empty() -> Proc {
        Proc::Seq(Vec::new())
    }

    pub(super) fn seq(parts: Vec<Proc>) -> Proc {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Proc::Seq(inner) => out.extend(inner),
                other => out.push(other),
            }
        }
        if out.len() == 1 {
            out.pop().unwrap_or_else(Proc::empty)
        } else {
            Proc::Seq(out)
        }
    }

    pub(super) fn par(parts: Vec<Proc>) -> Proc {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Proc::Par(inner) => out.extend(inner),
                Proc::Seq(s) if s.is_empty() => {}
                other => out.push(other),
            }
        }
        out.sort_by_key(Proc::shape);
        match out.len() {
            0 => Proc::empty(),
            1 => out.pop().unwrap_or_else(Proc::empty),
            _ => Proc::Par(out),
        }
    }

    /// The form without arguments, as text: `empty`, `a/1`, `(a/0 * (b/1 || c/0))`.
    pub(super) fn shape(&self) -> String {
        let join = |ps: &[Proc], sep: &str| {
            let parts: Vec<String> = ps.iter().map(Proc::shape).collect();
            format!("({})", parts.join(sep))
        };
        match self {
            Proc::Act { name, args } => format!("{name}/{}", args.len()),
            Proc::Seq(ps) if ps.is_empty() => "empty".into(),
            Proc::Seq(ps) => join(ps, " * "),
            Proc::Par(ps) => join(ps, " || "),
        }
    }

    /// The actions and their arguments, in order.
    pub(super) fn actions(&self) -> Vec<(&str, &[Expr])> {
        match self {
            Proc::Act { name, args } => vec![(name.as_str(), &args[..])],
            Proc::Seq(ps) | Proc::Par(ps) => ps.iter().flat_map(Proc::actions).collect(),
        }
    }

    /// The arguments of every action, in order: what a trusted method for `self` is called with.
    pub(super) fn args(&self) -> Vec<Expr> {
        self.actions()
            .into_iter()
            .flat_map(|(_, a)| a.to_vec())
            .collect()
    }

    /// `self` with its arguments replaced, in order, by the names `prefix0`, `prefix1`, ..:
    /// the form a trusted method states for its parameters.
    pub(super) fn named_args(&self, prefix: &str, span: Span) -> Proc {
        fn go(p: &Proc, prefix: &str, next: &mut usize, span: Span) -> Proc {
            match p {
                Proc::Act { name, args } => Proc::Act {
                    name: name.clone(),
                    args: args
                        .iter()
                        .map(|_| {
                            *next += 1;
                            Expr::name(&format!("{prefix}{}", *next - 1), span)
                        })
                        .collect(),
                },
                Proc::Seq(ps) => Proc::Seq(ps.iter().map(|q| go(q, prefix, next, span)).collect()),
                Proc::Par(ps) => Proc::Par(ps.iter().map(|q| go(q, prefix, next, span)).collect()),
            }
        }
        go(self, prefix, &mut 0, span)
    }

    /// Every order in which the actions may run (at most [`MAX_INTERLEAVINGS`]), each once.
    pub(super) fn interleavings(&self) -> Option<Vec<Run>> {
        let runs = match self {
            Proc::Act { name, args } => vec![vec![(name.clone(), args.clone())]],
            Proc::Seq(ps) => {
                let mut runs = vec![Vec::new()];
                for p in ps {
                    let tails = p.interleavings()?;
                    let mut next = Vec::new();
                    for head in &runs {
                        for tail in &tails {
                            let mut run: Run = head.clone();
                            run.extend(tail.iter().cloned());
                            next.push(run);
                        }
                    }
                    if next.len() > MAX_INTERLEAVINGS {
                        return None;
                    }
                    runs = next;
                }
                runs
            }
            Proc::Par(ps) => {
                let mut runs = vec![Vec::new()];
                for p in ps {
                    let others = p.interleavings()?;
                    let mut next = Vec::new();
                    for a in &runs {
                        for b in &others {
                            shuffles(a, b, &mut Vec::new(), &mut next);
                            if next.len() > MAX_INTERLEAVINGS {
                                return None;
                            }
                        }
                    }
                    runs = next;
                }
                runs
            }
        };
        // Two branches of the same actions give the same runs twice: one is enough.
        let mut seen = BTreeSet::new();
        Some(
            runs.into_iter()
                .filter(|run| {
                    seen.insert(
                        run.iter()
                            .map(|(a, args)| {
                                let args: Vec<String> = args.iter().map(print_expr).collect();
                                format!("{a}({})", args.join(", "))
                            })
                            .collect::<Vec<_>>(),
                    )
                })
                .collect(),
        )
    }
}

/// Every merge of `a` and `b` that keeps the order within each, after `prefix`, into `out`.
pub(super) fn shuffles<T: Clone>(a: &[T], b: &[T], prefix: &mut Vec<T>, out: &mut Vec<Vec<T>>) {
    if out.len() > MAX_INTERLEAVINGS {
        return;
    }
    match (a.split_first(), b.split_first()) {
        (None, _) => out.push(prefix.iter().chain(b).cloned().collect()),
        (_, None) => out.push(prefix.iter().chain(a).cloned().collect()),
        (Some((x, rest_a)), Some((y, rest_b))) => {
            prefix.push(x.clone());
            shuffles(rest_a, b, prefix, out);
            prefix.pop();
            prefix.push(y.clone());
            shuffles(a, rest_b, prefix, out);
            prefix.pop();
        }
    }
}

/// `e` with the names `params` replaced by `args` at once (no argument is rewritten by a
/// later replacement).
pub(super) fn instantiate(e: &Expr, params: &[Param], args: &[Expr]) -> Expr {
    let mut out = e.clone();
    for (k, p) in params.iter().enumerate() {
        out = out.substitute(&p.name.name, &Expr::name(&format!("$arg{k}"), p.span));
    }
    for (k, a) in args.iter().enumerate() {
        out = out.substitute(&format!("$arg{k}"), a);
    }
    out
}

/// What one step, action `a` with `args`, says of the values before (`prev`) and after
/// (`next`): its `ensures`, and every field it does not modify unchanged.
pub(super) fn step(
    model: &Model,
    a: &str,
    args: &[Expr],
    prev: &dyn Fn(&str) -> Expr,
    next: &dyn Fn(&str) -> Expr,
) -> Vec<Expr> {
    let action = &model.actions[a];
    let fields = model.field_names();
    let mut out: Vec<Expr> = action
        .ensures
        .iter()
        .map(|e| {
            let e = over_fields(e, &fields, &|x, _| next(x), &|x, _| prev(x));
            instantiate(&e, &action.params, args)
        })
        .collect();
    for (x, _) in &model.fields {
        if !action.modifies.contains(x) {
            out.push(eq(next(x), prev(x)));
        }
    }
    out
}

pub(super) fn binder(ty: &Type, name: &str, span: Span) -> Binder {
    Binder {
        ty: ty.clone(),
        name: Ident {
            name: name.to_string(),
            span,
        },
        range: None,
        span,
    }
}

/// `(\exists binders; c1 && c2 && ..)`, with each binder that a conjunct `x == e` defines
/// substituted away (the one-point rule: the same formula) and no quantifier where none is
/// left: a deterministic action's step needs no witness search.
pub(super) fn exists(binders: Vec<Binder>, conjuncts: Vec<Expr>, span: Span) -> Expr {
    fn defining<'e>(c: &'e Expr, x: &str) -> Option<&'e Expr> {
        let ExprKind::Binary {
            op: BinaryOp::Eq,
            lhs,
            rhs,
        } = &c.kind
        else {
            return None;
        };
        let is_x = |e: &Expr| matches!(&e.kind, ExprKind::Name(id) if id.name == x);
        if is_x(lhs) && !rhs.mentions(x) {
            Some(rhs)
        } else if is_x(rhs) && !lhs.mentions(x) {
            Some(lhs)
        } else {
            None
        }
    }
    let mut flat = Vec::new();
    for c in &conjuncts {
        let mut parts = Vec::new();
        c.flatten_and(&mut parts);
        flat.extend(parts.into_iter().cloned());
    }
    let mut kept = Vec::new();
    for b in binders {
        let x = b.name.name.clone();
        match flat.iter().position(|c| defining(c, &x).is_some()) {
            Some(k) => {
                let c = flat.remove(k);
                if let Some(e) = defining(&c, &x) {
                    flat = flat.iter().map(|c| c.substitute(&x, e)).collect();
                }
            }
            None => kept.push(b),
        }
    }
    let body = join(BinaryOp::And, flat, span);
    if kept.is_empty() {
        return body;
    }
    Expr {
        kind: ExprKind::Quantifier(Box::new(Quantifier {
            kind: QuantifierKind::Exists,
            binders: kept,
            cond: None,
            body,
        })),
        span,
    }
}

/// "Some interleaving of `proc` leads from the values `start` to the values `end`": a
/// disjunction over the interleavings, the values in between bound by `\exists`.
pub(super) fn relation(
    model: &Model,
    proc: &Proc,
    start: &dyn Fn(&str) -> Expr,
    end: &dyn Fn(&str) -> Expr,
    span: Span,
) -> Option<Expr> {
    let runs = proc.interleavings()?;
    let mut options = Vec::new();
    for (r, run) in runs.iter().enumerate() {
        let n = run.len();
        let between = |k: usize, x: &str| format!("s${r}${k}${x}");
        let state = |k: usize, x: &str| {
            if k == 0 {
                start(x)
            } else if k == n {
                end(x)
            } else {
                name_expr(&between(k, x), span)
            }
        };
        let mut conjuncts = Vec::new();
        if n == 0 {
            for (x, _) in &model.fields {
                conjuncts.push(eq(end(x), start(x)));
            }
        }
        for (k, (a, args)) in run.iter().enumerate() {
            conjuncts.extend(step(model, a, args, &|x| state(k, x), &|x| state(k + 1, x)));
        }
        // The values after each action but the last.
        let binders = (1..n)
            .flat_map(|k| {
                model
                    .fields
                    .iter()
                    .map(move |(x, ty)| binder(ty, &between(k, x), span))
            })
            .collect();
        let body = exists(binders, conjuncts, span);
        options.push(body);
    }
    Some(join(BinaryOp::Or, options, span))
}
