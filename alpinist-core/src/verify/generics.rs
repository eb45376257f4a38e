//! Generic routines at the types they are called with.
//!
//! A generic routine `T f<T>(..)` is verified once, as written: [`super::program::ty_of`] reads
//! a type parameter `T` like a class name, so its values are terms of the uninterpreted sort
//! of references, about which the encoding states nothing a type parameter would not allow
//! (the type checker admits only equality on them: no `null`, no fields, no arithmetic). A
//! proof over an uninterpreted sort holds in every interpretation of it, so the routine's
//! contract holds at every instantiation.
//!
//! A call at other types (`f<int>(..)`, or `f<seq<U>>(..)` in a generic caller) needs `f`'s
//! contract, and for a function or predicate its definition, at those types, where its
//! arguments have other sorts. [`instantiate`] adds, beside `f`, an *instance* of it named
//! `f<int>` with the type parameters replaced in every type it writes, and points the call at
//! it; an instance's own calls are instantiated in turn. Instances are not verified
//! themselves ([`is_instance`]): their proof is the generic routine's. A call whose type
//! arguments are all type parameters of its caller (`count<T>(..)` inside a generic `g<T>`)
//! uses the generic routine itself: those values already have the sort of references.
//!
//! Architecture invariant: this pass only adds members and renames calls; every other stage
//! of `verify` sees an ordinary program without type arguments at concrete types.

use std::collections::{BTreeMap, HashMap};

use crate::syntax::{
    print_type, Expr, ExprKind, Item, Member, MemberKind, Program, Type, TypeKind,
};

/// More instances than any real program needs: beyond it (polymorphic recursion such as
/// `f<T>` calling `f<seq<T>>`), calls are left as written and fail to encode (unsupported).
const MAX_INSTANCES: usize = 256;

/// Whether `name` is the name of an instance made by [`instantiate`]: it ends in its type
/// arguments. No user-written name does, nor does an overload's (`f(seq<int>)`, named by
/// `check::resolve_overloads`), which ends in its parameter types and must be verified.
pub fn is_instance(name: &str) -> bool {
    name.ends_with('>')
}

/// `program` with an instance of each generic routine for every concrete type-argument list
/// it is called with, and those calls renamed to their instance; `None` when no call needs
/// one (the program is then used as it is).
pub fn instantiate(program: &Program) -> Option<Program> {
    // Generic routines by name, where the name is declared once (a name declared twice is
    // refused by the checker's ambiguity rule before any call through it is trusted).
    let mut declared: HashMap<String, usize> = HashMap::new();
    let mut generic: HashMap<String, (Option<usize>, Member)> = HashMap::new();
    let mut each_member = |class: Option<usize>, m: &Member| {
        if let MemberKind::Method(method) = &m.kind {
            *declared.entry(method.name.name.clone()).or_default() += 1;
            if !method.type_params.is_empty() {
                generic.insert(method.name.name.clone(), (class, m.clone()));
            }
        }
    };
    for (k, item) in program.items.iter().enumerate() {
        match item {
            Item::Class(c) => c.members.iter().for_each(|m| each_member(Some(k), m)),
            Item::Member(m) => each_member(None, m),
        }
    }
    generic.retain(|name, _| declared.get(name) == Some(&1));
    if generic.is_empty() {
        return None;
    }

    let mut out = program.clone();
    let mut instances: BTreeMap<String, (Option<usize>, Member)> = BTreeMap::new();
    let mut pending: Vec<String> = Vec::new();
    let mut changed = false;
    for item in &mut out.items {
        let members = match item {
            Item::Class(c) => c.members.iter_mut().collect::<Vec<_>>(),
            Item::Member(m) => vec![m],
        };
        for m in members {
            changed |= rename_calls(m, &generic, &mut instances, &mut pending);
        }
    }
    while let Some(name) = pending.pop() {
        let Some((class, mut m)) = instances.get(&name).cloned() else {
            continue;
        };
        rename_calls(&mut m, &generic, &mut instances, &mut pending);
        instances.insert(name, (class, m));
    }
    if !changed {
        return None;
    }
    for (_, (class, m)) in instances {
        match class.map(|k| &mut out.items[k]) {
            Some(Item::Class(c)) => c.members.push(m),
            _ => out.items.push(Item::Member(m)),
        }
    }
    Some(out)
}

/// Points every call in `m` at concrete types to its instance, creating instances not made
/// yet (queued in `pending` to have their own calls renamed). Whether a call was renamed.
fn rename_calls(
    m: &mut Member,
    generic: &HashMap<String, (Option<usize>, Member)>,
    instances: &mut BTreeMap<String, (Option<usize>, Member)>,
    pending: &mut Vec<String>,
) -> bool {
    let own_params: Vec<String> = match &m.kind {
        MemberKind::Method(method) => method.type_params.iter().map(|t| t.name.clone()).collect(),
        MemberKind::Field(_) => return false,
    };
    let mut changed = false;
    let mut rename = |e: &mut Expr| {
        visit_mut(e, &mut |e| {
            let ExprKind::Call {
                name, type_args, ..
            } = &mut e.kind
            else {
                return;
            };
            let Some((class, decl)) = generic.get(&name.name) else {
                return;
            };
            let abstract_args = type_args
                .iter()
                .all(|t| matches!(&t.kind, TypeKind::Class(n) if own_params.contains(&n.name)));
            if abstract_args || instances.len() >= MAX_INSTANCES {
                return;
            }
            let shown: Vec<String> = type_args.iter().map(print_type).collect();
            let instance_name = format!("{}<{}>", name.name, shown.join(", "));
            if !instances.contains_key(&instance_name) {
                if let Some(inst) = instance_of(decl, type_args, &instance_name) {
                    instances.insert(instance_name.clone(), (*class, inst));
                    pending.push(instance_name.clone());
                } else {
                    return;
                }
            }
            name.name = instance_name;
            type_args.clear();
            changed = true;
        });
    };
    m.contract.for_each_expr_mut(&mut rename);
    if let MemberKind::Method(method) = &mut m.kind {
        match &mut method.body {
            crate::syntax::MethodBody::Block(b) => b
                .stmts
                .iter_mut()
                .for_each(|s| s.for_each_expr_deep_mut(&mut rename)),
            crate::syntax::MethodBody::Expr(e) => rename(e),
            crate::syntax::MethodBody::Abstract => {}
        }
    }
    changed
}

/// Calls `f` on `e` and every expression nested in it, outermost first.
fn visit_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    f(e);
    e.for_each_child_mut(&mut |c| visit_mut(c, f));
}

/// The generic member `decl` with its type parameters replaced by `args`, renamed `name`;
/// `None` when the numbers differ (the type checker reported that).
fn instance_of(decl: &Member, args: &[Type], name: &str) -> Option<Member> {
    let MemberKind::Method(method) = &decl.kind else {
        return None;
    };
    if method.type_params.len() != args.len() {
        return None;
    }
    let map: HashMap<String, Type> = method
        .type_params
        .iter()
        .map(|t| t.name.clone())
        .zip(args.iter().cloned())
        .collect();
    let mut inst = decl.clone();
    inst.for_each_type_mut(&mut |t| substitute(t, &map));
    if let MemberKind::Method(method) = &mut inst.kind {
        method.type_params.clear();
        method.name.name = name.to_string();
    }
    Some(inst)
}

/// `t` with every type parameter in `map` replaced, at any depth.
fn substitute(t: &mut Type, map: &HashMap<String, Type>) {
    match &mut t.kind {
        TypeKind::Class(n) => {
            if let Some(by) = map.get(&n.name) {
                t.kind = by.kind.clone();
            }
        }
        TypeKind::Seq(e) | TypeKind::Set(e) | TypeKind::Bag(e) | TypeKind::Option(e) => {
            substitute(e, map)
        }
        TypeKind::Map(k, v) | TypeKind::Tuple(k, v) => {
            substitute(k, map);
            substitute(v, map);
        }
        TypeKind::Array { elem, .. } => substitute(elem, map),
        TypeKind::Int
        | TypeKind::Bool
        | TypeKind::Void
        | TypeKind::Frac
        | TypeKind::ZFrac
        | TypeKind::Rational
        | TypeKind::Resource => {}
    }
}
