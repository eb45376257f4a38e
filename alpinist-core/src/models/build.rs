//! Building the lowered IR: expressions, statements, routines, and the model class itself
//! with its fields, tokens, constructor, process-state predicates and `destroy$`.

use std::collections::BTreeSet;

use crate::syntax::*;

use super::decl::Model;

pub(super) fn param(kind: TypeKind, name: &str, span: Span) -> Param {
    typed_param(Type { kind, span }, name, span)
}

pub(super) fn typed_param(ty: Type, name: &str, span: Span) -> Param {
    Param {
        ty,
        name: Ident {
            name: name.to_string(),
            span,
        },
        span,
    }
}

pub(super) fn name_expr(name: &str, span: Span) -> Expr {
    Expr::name(name, span)
}

pub(super) fn field(base: Expr, name: &str) -> Expr {
    let span = base.span;
    Expr {
        kind: ExprKind::Field {
            base: Box::new(base),
            name: Ident {
                name: name.to_string(),
                span,
            },
        },
        span,
    }
}

pub(super) fn perm(loc: Expr, amount: Expr) -> Expr {
    let span = loc.span;
    Expr {
        kind: ExprKind::Builtin {
            op: Builtin::Perm,
            args: vec![loc, amount],
        },
        span,
    }
}

pub(super) fn write(span: Span) -> Expr {
    Expr {
        kind: ExprKind::PermLit(PermLit::Write),
        span,
    }
}

pub(super) fn int(v: i64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::IntLit(num_bigint::BigUint::from(v as u64)),
        span,
    }
}

pub(super) fn old(e: Expr) -> Expr {
    let span = e.span;
    Expr {
        kind: ExprKind::Old(Box::new(e)),
        span,
    }
}

pub(super) fn eq(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinaryOp::Eq, a, b)
}

/// `parts` joined by `op`, `true` for none.
pub(super) fn join(op: BinaryOp, parts: Vec<Expr>, span: Span) -> Expr {
    parts
        .into_iter()
        .reduce(|a, b| Expr::binary(op, a, b))
        .unwrap_or(Expr {
            kind: ExprKind::BoolLit(true),
            span,
        })
}

pub(super) fn star(parts: Vec<Expr>, span: Span) -> Expr {
    join(BinaryOp::Star, parts, span)
}

pub(super) fn call(receiver: Expr, name: &str, args: Vec<Expr>, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Call {
            receiver: Some(Box::new(receiver)),
            name: Ident {
                name: name.to_string(),
                span,
            },
            type_args: Vec::new(),
            args,
            given: Vec::new(),
            yields: Vec::new(),
        },
        span,
    }
}

pub(super) fn stmt(kind: StmtKind, span: Span) -> Stmt {
    Stmt { kind, span }
}

pub(super) fn call_stmt(receiver: Expr, name: &str, args: Vec<Expr>, span: Span) -> Stmt {
    stmt(StmtKind::Expr(call(receiver, name, args, span)), span)
}

/// A method of a lowered model class: trusted (no body) or, with `body`, verified.
pub(super) fn routine(
    name: &str,
    params: Vec<Param>,
    clauses: Vec<ClauseKind>,
    body: Option<Block>,
    span: Span,
) -> Member {
    Member {
        gpuopts: Vec::new(),
        contract: Contract {
            clauses: clauses
                .into_iter()
                .map(|kind| Clause { kind, span })
                .collect(),
        },
        kind: MemberKind::Method(Method {
            modifiers: Vec::new(),
            return_type: Some(Type {
                kind: TypeKind::Void,
                span,
            }),
            name: Ident {
                name: name.to_string(),
                span,
            },
            type_params: Vec::new(),
            params,
            body: body.map_or(MethodBody::Abstract, MethodBody::Block),
            span,
            is_run: false,
            model_member: None,
        }),
        span,
    }
}

/// A trusted (bodiless) method of a lowered model class: a rule of the model theory.
pub(super) fn trusted(
    name: &str,
    params: Vec<Param>,
    requires: Expr,
    ensures: Expr,
    span: Span,
) -> Member {
    routine(
        name,
        params,
        vec![ClauseKind::Requires(requires), ClauseKind::Ensures(ensures)],
        None,
        span,
    )
}

/// `e` with the model's field names read through `now` (outside `\old`) and `old` (inside).
pub(super) fn over_fields(
    e: &Expr,
    fields: &BTreeSet<String>,
    now: &dyn Fn(&str, Span) -> Expr,
    old: &dyn Fn(&str, Span) -> Expr,
) -> Expr {
    match &e.kind {
        ExprKind::Name(id) if fields.contains(&id.name) => now(&id.name, e.span),
        ExprKind::Old(inner) => over_fields(inner, fields, old, old),
        _ => {
            let mut out = e.clone();
            out.for_each_child_mut(&mut |c| *c = over_fields(c, fields, now, old));
            out
        }
    }
}

/// `HPerm(base.x, amount)` for field `x` of `model` (see `models`'s comment).
pub(super) fn history_perm(model: &Model, base: &Expr, x: &str, amount: Expr) -> Expr {
    let token = perm(field(base.clone(), &format!("{x}$H")), amount.clone());
    if !model.frozen(x) {
        return token;
    }
    star(
        vec![
            token,
            perm(field(base.clone(), x), amount),
            eq(
                field(base.clone(), x),
                field(base.clone(), &format!("{x}$H")),
            ),
        ],
        base.span,
    )
}

pub(super) fn this_expr(span: Span) -> Expr {
    Expr {
        kind: ExprKind::This,
        span,
    }
}

/// `Perm` of every field of `model` on `base`: the value and its token.
pub(super) fn value_perms(model: &Model, base: &Expr, span: Span) -> Vec<Expr> {
    model
        .fields
        .iter()
        .flat_map(|(x, _)| {
            [
                perm(field(base.clone(), x), write(span)),
                perm(field(base.clone(), &format!("{x}$P")), write(span)),
            ]
        })
        .collect()
}

/// The model as a class: its fields, the tokens, the constructor, the process-state
/// predicate, `destroy$` and `extra` (the trusted methods the lowered uses call, the process
/// contracts' checks).
pub(super) fn model_class(
    class: &Class,
    model: &Model,
    mut arities: BTreeSet<usize>,
    extra: Vec<Member>,
) -> Class {
    let span = class.name.span;
    let this = this_expr(span);
    let bool_ty = Type {
        kind: TypeKind::Bool,
        span,
    };
    let mut members = Vec::new();
    let field_member = |name: String, ty: Type| Member {
        gpuopts: Vec::new(),
        contract: Contract::default(),
        kind: MemberKind::Field(Field {
            ty,
            name: Ident { name, span },
            span,
        }),
        span,
    };
    for (x, ty) in &model.fields {
        members.push(field_member(x.clone(), ty.clone()));
        members.push(field_member(format!("{x}$P"), bool_ty.clone()));
        members.push(field_member(format!("{x}$A"), bool_ty.clone()));
        members.push(field_member(format!("{x}$H"), ty.clone()));
    }
    // `new M()`: the value and `Perm`'s token only, at the default values.
    let mut ensures = value_perms(model, &this, span);
    for (x, ty) in &model.fields {
        let zero = match ty.kind {
            TypeKind::Bool => Expr {
                kind: ExprKind::BoolLit(false),
                span,
            },
            _ => int(0, span),
        };
        ensures.push(eq(field(this.clone(), x), zero));
    }
    let mut constructor = routine(
        &class.name.name,
        Vec::new(),
        vec![ClauseKind::Ensures(star(ensures, span))],
        Some(Block {
            stmts: Vec::new(),
            span,
        }),
        span,
    );
    if let MemberKind::Method(m) = &mut constructor.kind {
        m.return_type = None;
    }
    members.push(constructor);
    // The process state: an abstract predicate instance per (fraction, shape, arguments).
    arities.insert(0);
    for k in arities {
        // `rational`: a split's `p1 + p2` may be any positive sum.
        let mut params = vec![
            param(TypeKind::Rational, "p", span),
            param(TypeKind::Int, "code", span),
        ];
        params.extend((0..k).map(|i| param(TypeKind::Int, &format!("a{i}"), span)));
        members.push(Member {
            gpuopts: Vec::new(),
            contract: Contract::default(),
            kind: MemberKind::Method(Method {
                modifiers: Vec::new(),
                return_type: Some(Type {
                    kind: TypeKind::Resource,
                    span,
                }),
                name: Ident {
                    name: format!("state${k}"),
                    span,
                },
                type_params: Vec::new(),
                params,
                body: MethodBody::Abstract,
                span,
                is_run: false,
                model_member: None,
            }),
            span,
        });
    }
    // destroy: `state(1, empty)` and every `HPerm` back to `Perm`, at the final values.
    let mut requires = vec![call(
        this.clone(),
        "state$0",
        vec![int(1, span), int(0, span)],
        span,
    )];
    requires.extend(
        model
            .fields
            .iter()
            .map(|(x, _)| history_perm(model, &this, x, write(span))),
    );
    let mut ensures = value_perms(model, &this, span);
    for (x, _) in &model.fields {
        ensures.push(eq(
            field(this.clone(), x),
            old(field(this.clone(), &format!("{x}$H"))),
        ));
    }
    members.push(trusted(
        "destroy$",
        Vec::new(),
        star(requires, span),
        star(ensures, span),
        span,
    ));
    members.extend(extra);
    Class {
        contract: Contract::default(),
        name: class.name.clone(),
        members,
        span: class.span,
        is_model: false,
    }
}

/// `m.x` → `m.x$tag` for the model's fields `x`, `m` the model object.
pub(super) fn rewrite_fields(e: &mut Expr, m: &Expr, fields: &BTreeSet<String>, tag: &str) {
    if let ExprKind::Field { base, name } = &mut e.kind {
        if same_name(base, m) && fields.contains(&name.name) {
            name.name = format!("{}${tag}", name.name);
            return;
        }
    }
    e.for_each_child_mut(&mut |c| rewrite_fields(c, m, fields, tag));
}

pub(super) fn same_name(a: &Expr, b: &Expr) -> bool {
    matches!((&a.kind, &b.kind), (ExprKind::Name(x), ExprKind::Name(y)) if x.name == y.name)
}
