//! The CPU function a Rust kernel expands to: the user's own statements (so a type error or a
//! breakpoint lands in the user's code), with the helper attributes, ghost parameters and ghost
//! code taken out; `par(lo..hi)` (the prelude's) gives back `lo..hi`, run sequentially.
//!
//! Running the threads one after another is one of the interleavings the race-freedom proof
//! covers, so it computes what every interleaving computes; a par block with barriers runs by
//! barrier-interval fission (`fission.rs`: every thread up to the barrier, then every thread on).
//!
//! On entry the function asserts what the proof assumed about its arguments and can be decided
//! from them: the precondition's conjuncts over integer and boolean parameters and slice lengths
//! (the proof covers no other sizes), and the 32-bit mode's entry assumption that unsigned
//! parameters fit in an `i32`.

use std::collections::HashMap;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::visit_mut::VisitMut;

use crate::syntax::{print_expr, BinaryOp, ClauseKind, Expr, ExprKind, Item, MemberKind, UnaryOp};

use super::lower::{helper_name, Lowered, RustTy};

/// The item with the helpers taken out: what the user wrote, as Rust runs it (par blocks with
/// barriers fissioned, `fission.rs`, where the lowering gave the locals' types), and the errors
/// of statements that have no CPU form.
pub(super) fn cpu_function(
    item: &syn::ItemFn,
    lowered: Option<(&Lowered, usize)>,
) -> (syn::ItemFn, Vec<syn::Error>) {
    let mut f = item.clone();
    f.attrs.retain(|a| helper_name(a).is_none());
    f.sig.inputs = inputs_without_ghosts(&f.sig);
    let mut strip = Strip {
        types: lowered.map(|(l, k)| l.local_types[k].clone().into_iter()),
        errors: Vec::new(),
    };
    strip.visit_block_mut(&mut f.block);
    if let Some((lowered, k)) = lowered {
        let checks = entry_checks(&item.sig.ident.to_string(), lowered, k);
        let body = &f.block;
        f.block = Box::new(syn::parse_quote!({
            #(#checks)*
            #body
        }));
    }
    (f, strip.errors)
}

/// The parameters of `sig` that exist at run time: all but the `#[ghost]` ones (the CPU
/// function's and the launcher's signature).
pub(super) fn inputs_without_ghosts(
    sig: &syn::Signature,
) -> syn::punctuated::Punctuated<syn::FnArg, syn::token::Comma> {
    sig.inputs
        .iter()
        .filter(|arg| match arg {
            syn::FnArg::Typed(pt) => !pt.attrs.iter().any(|a| helper_name(a) == Some("ghost")),
            syn::FnArg::Receiver(_) => true,
        })
        .cloned()
        .collect()
}

/// Takes the helpers out of a body, and writes out the type the proof assumed of each `let`
/// and `for` variable (in source order, as the lowering met them): where rustc would infer
/// another, the build fails with a type mismatch instead of running what was not proved.
struct Strip {
    types: Option<std::vec::IntoIter<RustTy>>,
    errors: Vec<syn::Error>,
}

impl Strip {
    fn next_type(&mut self) -> Option<TokenStream> {
        Some(match self.types.as_mut()?.next()? {
            RustTy::I32 => quote!(i32),
            RustTy::Usize => quote!(usize),
            RustTy::U32 => quote!(u32),
            RustTy::Bool => quote!(bool),
            RustTy::Slice(elem) => match *elem {
                RustTy::Bool => quote!(::std::vec::Vec<bool>),
                RustTy::Usize => quote!(::std::vec::Vec<usize>),
                RustTy::U32 => quote!(::std::vec::Vec<u32>),
                _ => quote!(::std::vec::Vec<i32>),
            },
            RustTy::Int | RustTy::Seq(_) | RustTy::Unknown => return None,
        })
    }
}

impl VisitMut for Strip {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        // With the types written out, a par block with barriers becomes its fissioned form.
        if let (syn::Expr::ForLoop(f), Some(_)) = (&*e, &self.types) {
            let is_par = matches!(&*f.expr, syn::Expr::Call(c) if c.args.len() == 1
                && matches!(&c.args[0], syn::Expr::Call(p) if matches!(&*p.func, syn::Expr::Path(x) if x.path.is_ident("par"))));
            if is_par && super::fission::has_barrier(f.body.to_token_stream()) {
                match super::fission::fission(f) {
                    Ok(x) => *e = x,
                    Err(err) => self.errors.push(err),
                }
            }
        }
    }

    fn visit_attributes_mut(&mut self, attrs: &mut Vec<syn::Attribute>) {
        attrs.retain(|a| helper_name(a).is_none());
    }

    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        let ty = self.next_type();
        if let (Some(ty), syn::Pat::Ident(_)) = (ty, &local.pat) {
            local.pat = syn::Pat::Type(syn::PatType {
                attrs: Vec::new(),
                pat: Box::new(local.pat.clone()),
                colon_token: Default::default(),
                ty: Box::new(syn::parse_quote!(#ty)),
            });
        }
        syn::visit_mut::visit_local_mut(self, local);
    }

    fn visit_expr_for_loop_mut(&mut self, f: &mut syn::ExprForLoop) {
        if let Some(ty) = self.next_type() {
            let range = &f.expr;
            f.expr = syn::parse_quote!(
                ::core::convert::identity::<::core::ops::Range<#ty>>(#range)
            );
        }
        syn::visit_mut::visit_expr_for_loop_mut(self, f);
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        b.stmts.retain(|s| !is_ghost_stmt(s));
        syn::visit_mut::visit_block_mut(self, b);
    }
}

fn is_ghost_stmt(s: &syn::Stmt) -> bool {
    let mac = match s {
        syn::Stmt::Macro(m) => &m.mac,
        syn::Stmt::Expr(syn::Expr::Macro(m), _) => &m.mac,
        _ => return false,
    };
    mac.path.is_ident("ghost")
}

/// `assert!`s of what the proof assumed of the arguments.
pub(super) fn entry_checks(kernel: &str, lowered: &Lowered, routine: usize) -> Vec<TokenStream> {
    let params: HashMap<&str, &RustTy> = lowered.params[routine]
        .iter()
        .filter(|(_, _, ghost)| !ghost)
        .map(|(n, t, _)| (n.as_str(), t))
        .collect();
    let mut checks = Vec::new();
    for (name, ty, ghost) in &lowered.params[routine] {
        if *ghost || !ty.is_unsigned() {
            continue;
        }
        let id = format_ident!("{}", name);
        let message = format!(
            "alpinist: `{kernel}` was verified for `{name}` up to i32::MAX (OpenCL's `int`)"
        );
        checks.push(quote!(assert!((#id as u64) <= (i32::MAX as u64), #message);));
    }
    let Some(Item::Member(member)) = lowered.program.items.get(routine) else {
        return checks;
    };
    if !matches!(member.kind, MemberKind::Method(_)) {
        return checks;
    }
    for clause in &member.contract.clauses {
        let (ClauseKind::Requires(e) | ClauseKind::Context(e) | ClauseKind::ContextEverywhere(e)) =
            &clause.kind
        else {
            continue;
        };
        let mut conjuncts = Vec::new();
        e.flatten_and(&mut conjuncts);
        for c in conjuncts {
            if let Some(cond) = rust_condition(c, &params) {
                let message = format!(
                    "alpinist: `{kernel}` was verified only for calls where `{}` holds",
                    print_expr(c)
                );
                checks.push(quote!(assert!(#cond, #message);));
            }
        }
    }
    checks
}

/// A precondition conjunct as a Rust condition over the arguments, computed in `i128` (no
/// overflow for the values a kernel takes), where it mentions only integer and boolean
/// parameters, slice lengths, literals and `+ - *`, comparisons and boolean operators.
fn rust_condition(e: &Expr, params: &HashMap<&str, &RustTy>) -> Option<TokenStream> {
    let sub = |x: &Expr| rust_condition(x, params);
    Some(match &e.kind {
        ExprKind::IntLit(n) => {
            let lit = Literal::i128_suffixed(i128::try_from(n).ok()?);
            quote!(#lit)
        }
        ExprKind::BoolLit(b) => quote!(#b),
        ExprKind::Name(id) => {
            let ty = params.get(id.name.as_str())?;
            let name = format_ident!("{}", id.name);
            match ty {
                RustTy::Bool => quote!(#name),
                t if t.is_integer() => quote!((#name as i128)),
                _ => return None,
            }
        }
        ExprKind::Field { base, name } if name.name == "length" => match &base.kind {
            ExprKind::Name(a) if matches!(params.get(a.name.as_str()), Some(RustTy::Slice(_))) => {
                let a = format_ident!("{}", a.name);
                quote!((#a.len() as i128))
            }
            _ => return None,
        },
        ExprKind::Unary { op, operand } => {
            let x = sub(operand)?;
            match op {
                UnaryOp::Not => quote!((!#x)),
                UnaryOp::Neg => quote!((-#x)),
            }
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (sub(lhs)?, sub(rhs)?);
            match op {
                BinaryOp::Add => quote!((#a + #b)),
                BinaryOp::Sub => quote!((#a - #b)),
                BinaryOp::Mul => quote!((#a * #b)),
                BinaryOp::Eq => quote!((#a == #b)),
                BinaryOp::Neq => quote!((#a != #b)),
                BinaryOp::Lt => quote!((#a < #b)),
                BinaryOp::Le => quote!((#a <= #b)),
                BinaryOp::Gt => quote!((#a > #b)),
                BinaryOp::Ge => quote!((#a >= #b)),
                BinaryOp::And | BinaryOp::Star => quote!((#a && #b)),
                BinaryOp::Or => quote!((#a || #b)),
                BinaryOp::Implies => quote!((!#a || #b)),
                _ => return None,
            }
        }
        _ => return None,
    })
}
