//! Rust kernels, pure functions and lemmas (`syn::ItemFn`s with alpinist's helper attributes) →
//! the IR's [`Program`]: one top-level member each, its contract from the function's
//! attributes, its body from the statements (a pure function's: its one expression). The mapping is 1:1 (see `rust/mod.rs` for the table); everything outside the
//! supported subset is an error at its tokens, never dropped.

use std::collections::{BTreeSet, HashMap};

use num_bigint::BigUint;
use proc_macro2::{Delimiter, Span as RustSpan, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;

use crate::syntax::{
    Barrier, BarrierStyle, BinaryOp, Block, Clause, ClauseKind, Contract, Expr, ExprKind, GpuOpt,
    GpuOptKind, Ident, Item, LocalVar, Member, MemberKind, Method, MethodBody, ParBlock, ParGroup,
    ParGroupStyle, ParIter, Param, Program, Span, Stmt, StmtKind, TileLayout, Type, TypeKind,
};

use super::expr::{binary, int_lit, split_commas, Mode};
use super::spans::SpanMap;

type Res<T> = Result<T, syn::Error>;

/// The helper attributes `#[alpinist::kernel]` consumes (and strips from the item it emits).
pub const HELPERS: &[&str] = &[
    "requires",
    "ensures",
    "context",
    "context_everywhere",
    "loop_invariant",
    "thread",
    "barrier",
    "gpuopt",
    "ghost",
    "decreases",
    "local",
];

/// The Rust type of a value, as far as the lowering needs it: which integers are unsigned
/// (their operations get the "not below zero" obligation), what `.len()` means, what PVL type
/// a local gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RustTy {
    I32,
    Usize,
    U32,
    Bool,
    /// `Int`: a mathematical integer (ghost code and specifications).
    Int,
    /// `&[T]`, `&mut [T]`, `Vec<T>`.
    Slice(Box<RustTy>),
    /// `Seq<T>`: a ghost sequence.
    Seq(Box<RustTy>),
    /// An integer whose type Rust infers from later uses (an unsuffixed literal, a local
    /// initialised by one); a later lowering pass knows it, else it is `i32` (Rust's default).
    Unknown,
}

impl RustTy {
    pub fn from_name(name: &str) -> Option<RustTy> {
        Some(match name {
            "i32" => RustTy::I32,
            "usize" => RustTy::Usize,
            "u32" => RustTy::U32,
            "bool" => RustTy::Bool,
            "Int" => RustTy::Int,
            _ => return None,
        })
    }
    pub fn is_unsigned(&self) -> bool {
        matches!(self, RustTy::Usize | RustTy::U32)
    }
    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            RustTy::I32 | RustTy::Usize | RustTy::U32 | RustTy::Int | RustTy::Unknown
        )
    }
    /// The PVL type.
    fn pvl(&self, span: Span) -> Type {
        let kind = match self {
            RustTy::Bool => TypeKind::Bool,
            RustTy::Slice(e) => TypeKind::Array {
                elem: Box::new(e.pvl(span)),
                size: None,
            },
            RustTy::Seq(e) => TypeKind::Seq(Box::new(e.pvl(span))),
            _ => TypeKind::Int,
        };
        Type { kind, span }
    }
}

/// A name in scope.
#[derive(Clone, Debug)]
pub(super) struct Var {
    pub ty: RustTy,
    pub mutable: bool,
    pub ghost: bool,
}

/// The lowering's state: token numbering, names in scope, what it learnt about types.
pub(super) struct Cx {
    pub spans: SpanMap,
    pub vars: HashMap<String, Var>,
    /// Types of locals learnt by an earlier pass (from later uses).
    pub inferred: HashMap<String, RustTy>,
    /// Types of locals learnt by this pass.
    pub refined: HashMap<String, RustTy>,
    /// Locals of one (not yet known) type, learnt by this pass.
    pub links: Vec<(String, String)>,
    /// The type of each executable `let` and `for` variable, in source order: the CPU function
    /// writes them out, so that rustc confirms the types the proof assumed.
    pub local_types: Vec<RustTy>,
    /// Spans of the executable arithmetic operations of an unsigned type.
    pub unsigned: BTreeSet<Span>,
    /// The routine's parameters: name, type, whether ghost.
    pub params: Vec<(String, RustTy, bool)>,
    /// The kernel's return type (for `result`).
    pub result: RustTy,
    /// Result types of the functions specifications may call.
    pub functions: HashMap<String, RustTy>,
    /// Labels of the enclosing par blocks, innermost last.
    pars: Vec<String>,
    par_count: usize,
    /// The `gpuopt` statements of the loop or par block just lowered (from its
    /// `#[gpuopt(..)]` attributes), which go right before it, as in PVL.
    gpuopts_before: Vec<Stmt>,
    /// The arrays marked `#[local]`, with the attribute (where an error about it points).
    pub local_arrays: Vec<(String, TokenStream)>,
}

/// A loop's `#[gpuopt(..)]`, before its loop variable is known.
struct LoopOpt {
    merge: bool,
    factor: Expr,
    span: Span,
}

/// What a function of a kernel module is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoutineKind {
    /// `#[alpinist::kernel]`: executable, with a CPU function.
    Kernel,
    /// `#[alpinist::pure]`: a pure function of specifications (`pure T f(..) = e;`), its body
    /// one expression.
    Pure,
    /// `#[alpinist::lemma]`: ghost code called from ghost code, its body a proof.
    Lemma,
}

/// A kernel lowered to the IR, with what the expansion needs besides.
pub struct Lowered {
    pub program: Program,
    pub spans: SpanMap,
    /// The `unsigned` operations of the 32-bit mode (`verify::Int32::unsigned`).
    pub unsigned: BTreeSet<Span>,
    /// Per routine, in order: the parameters, with their types and whether they are ghost.
    pub params: Vec<Vec<(String, RustTy, bool)>>,
    /// Per routine, in order: the type of each executable `let` and `for` variable, in source
    /// order (`Cx::local_types`).
    pub local_types: Vec<Vec<RustTy>>,
    /// Per routine, in order: the arrays marked `#[local]` (work-group local memory), with the
    /// attribute: the expansion checks that the code generation put them there.
    pub local_arrays: Vec<Vec<(String, TokenStream)>>,
}

/// Lowers a kernel function.
pub fn lower_kernel(item: &syn::ItemFn) -> Result<Lowered, syn::Error> {
    lower_routines(&[(RoutineKind::Kernel, item)])
}

/// Lowers the functions of a kernel module into one program (each may call the pure functions
/// and lemmas). Locals whose integer type Rust infers from later uses are typed by lowering a
/// routine again with what the previous pass learnt (a few passes: each adds types).
pub fn lower_routines(items: &[(RoutineKind, &syn::ItemFn)]) -> Result<Lowered, syn::Error> {
    let mut functions = HashMap::new();
    for (kind, item) in items {
        if *kind == RoutineKind::Pure {
            if let syn::ReturnType::Type(_, ty) = &item.sig.output {
                functions.insert(item.sig.ident.to_string(), scalar(ty)?);
            }
        }
    }
    let mut spans = SpanMap::default();
    let mut unsigned = BTreeSet::new();
    let mut members = Vec::new();
    let mut params = Vec::new();
    let mut local_types = Vec::new();
    let mut local_arrays = Vec::new();
    for (kind, item) in items {
        let mut inferred = HashMap::new();
        let cx = loop {
            let mut cx = Cx::new(inferred.clone(), spans.clone(), functions.clone());
            let member = cx.routine(item, *kind)?;
            let mut known = inferred.clone();
            known.extend(cx.refined.iter().map(|(k, v)| (k.clone(), v.clone())));
            // Linked locals share what one of them is known to be.
            let mut changed = true;
            while changed {
                changed = false;
                for (x, y) in &cx.links {
                    for (from, to) in [(x, y), (y, x)] {
                        if let (Some(t), false) = (known.get(from).cloned(), known.contains_key(to))
                        {
                            known.insert(to.clone(), t);
                            changed = true;
                        }
                    }
                }
            }
            let new: Vec<_> = known
                .into_iter()
                .filter(|(k, _)| !inferred.contains_key(k))
                .collect();
            if new.is_empty() {
                members.push(member);
                break cx;
            }
            inferred.extend(new);
        };
        spans = cx.spans;
        unsigned.extend(cx.unsigned);
        local_types.push(
            cx.local_types
                .into_iter()
                .map(|t| if t == RustTy::Unknown { RustTy::I32 } else { t })
                .collect(),
        );
        params.push(cx.params);
        local_arrays.push(cx.local_arrays);
    }
    let span = members
        .iter()
        .map(|m| m.span)
        .reduce(Span::to)
        .unwrap_or_default();
    Ok(Lowered {
        program: Program {
            items: members.into_iter().map(Item::Member).collect(),
            span,
        },
        spans,
        unsigned,
        params,
        local_types,
        local_arrays,
    })
}

fn is_ghost(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| helper_name(a) == Some("ghost"))
}

/// The helper an attribute names (`requires`, `alpinist::requires`), if it is one.
pub fn helper_name(attr: &syn::Attribute) -> Option<&'static str> {
    let name = alpinist_attr(attr)?;
    HELPERS.iter().copied().find(|h| name == *h)
}

/// The name of an attribute written `name` or `alpinist::name`.
pub(super) fn alpinist_attr(attr: &syn::Attribute) -> Option<String> {
    let path = attr.path();
    let ours = path.segments.len() == 1
        || (path.segments.len() == 2 && path.segments[0].ident == "alpinist");
    ours.then(|| path.segments.last().map(|s| s.ident.to_string()))
        .flatten()
}

fn param_name(pt: &syn::PatType) -> Res<String> {
    match &*pt.pat {
        syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Ok(p.ident.to_string()),
        other => Err(syn::Error::new_spanned(
            other,
            "kernel parameters are plain names",
        )),
    }
}

/// The Rust type of a parameter or annotated local.
pub(super) fn rust_ty(ty: &syn::Type) -> Res<RustTy> {
    let unsupported = || {
        syn::Error::new_spanned(
            ty,
            "kernels take `usize`, `u32`, `i32`, `bool`, slices `&[T]`/`&mut [T]` of those, and \
             ghost `Seq<T>`/`Int`",
        )
    };
    match ty {
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(s) => Ok(RustTy::Slice(Box::new(scalar(&s.elem)?))),
            syn::Type::Path(_) => match rust_ty(&r.elem)? {
                seq @ RustTy::Seq(_) => Ok(seq),
                _ => Err(unsupported()),
            },
            _ => Err(unsupported()),
        },
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            let name = seg.ident.to_string();
            match (&seg.arguments, name.as_str()) {
                (syn::PathArguments::None, n) => RustTy::from_name(n).ok_or_else(unsupported),
                (syn::PathArguments::AngleBracketed(a), "Seq" | "Vec") if a.args.len() == 1 => {
                    let syn::GenericArgument::Type(elem) = &a.args[0] else {
                        return Err(unsupported());
                    };
                    let elem = Box::new(scalar(elem)?);
                    Ok(if name == "Seq" {
                        RustTy::Seq(elem)
                    } else {
                        RustTy::Slice(elem)
                    })
                }
                _ => Err(unsupported()),
            }
        }
        _ => Err(unsupported()),
    }
}

fn scalar(ty: &syn::Type) -> Res<RustTy> {
    match rust_ty(ty)? {
        t @ (RustTy::Slice(_) | RustTy::Seq(_)) => Err(syn::Error::new_spanned(
            ty,
            format!("nested collections ({t:?}) are not supported in kernels"),
        )),
        t => Ok(t),
    }
}

fn stmt(kind: StmtKind, span: Span) -> Stmt {
    Stmt { kind, span }
}

impl Cx {
    fn new(
        inferred: HashMap<String, RustTy>,
        spans: SpanMap,
        functions: HashMap<String, RustTy>,
    ) -> Cx {
        Cx {
            spans,
            vars: HashMap::new(),
            inferred,
            refined: HashMap::new(),
            params: Vec::new(),
            links: Vec::new(),
            local_types: Vec::new(),
            unsigned: BTreeSet::new(),
            result: RustTy::Unknown,
            functions,
            pars: Vec::new(),
            par_count: 0,
            gpuopts_before: Vec::new(),
            local_arrays: Vec::new(),
        }
    }

    fn routine(&mut self, item: &syn::ItemFn, kind: RoutineKind) -> Res<Member> {
        let sig = &item.sig;
        if let Some(t) = sig
            .generics
            .lt_token
            .map(|t| t.span())
            .or(sig.asyncness.map(|t| t.span))
            .or(sig.unsafety.map(|t| t.span))
        {
            return Err(syn::Error::new(
                t,
                "a kernel is a plain function: no generics, `async` or `unsafe`",
            ));
        }
        let name_span = self.spans.at(sig.ident.span());
        // Types first (contracts mention the parameters), tokens in source order after.
        let mut params = Vec::new();
        for arg in &sig.inputs {
            let syn::FnArg::Typed(pt) = arg else {
                return Err(syn::Error::new(arg.span(), "a kernel is a free function"));
            };
            let name = param_name(pt)?;
            let ty = rust_ty(&pt.ty)?;
            let mutable = matches!(&*pt.pat, syn::Pat::Ident(p) if p.mutability.is_some());
            // The parameters of pure functions and lemmas are ghost, as all their code.
            let ghost = is_ghost(&pt.attrs) || kind != RoutineKind::Kernel;
            if let Some(a) = pt.attrs.iter().find(|a| helper_name(a) != Some("ghost")) {
                return Err(syn::Error::new_spanned(
                    a,
                    "a kernel parameter takes only `#[ghost]`",
                ));
            }
            self.vars.insert(
                name.clone(),
                Var {
                    ty: ty.clone(),
                    mutable,
                    ghost,
                },
            );
            self.params.push((name.clone(), ty.clone(), ghost));
            params.push((pt, name, ty, ghost));
        }
        self.result = match &sig.output {
            syn::ReturnType::Default => RustTy::Bool, // unused: no `result` without a value
            syn::ReturnType::Type(_, ty) => scalar(ty)?,
        };
        let mut clauses = Vec::new();
        for attr in &item.attrs {
            match helper_name(attr) {
                Some(clause @ ("requires" | "ensures" | "context" | "context_everywhere")) => {
                    clauses.extend(self.clause_attr(attr, clause)?)
                }
                Some("decreases") => clauses.push(self.decreases_attr(attr)?),
                Some(other) => {
                    return Err(syn::Error::new_spanned(
                        attr,
                        format!("`#[{other}]` does not go on a function"),
                    ))
                }
                None => {}
            }
        }
        // What Rust's types promise: slices are never null, unsigned parameters never negative.
        let mut implied = Vec::new();
        let mut pvl_params = Vec::new();
        for (pt, name, ty, ghost) in params {
            let span = self.spans.at(pt.pat.span());
            let ident = Ident {
                name: name.clone(),
                span,
            };
            let fact = match &ty {
                RustTy::Slice(_) => Some(BinaryOp::Neq),
                t if t.is_unsigned() => Some(BinaryOp::Le),
                _ => None,
            };
            if let Some(op) = fact {
                let var = Expr {
                    kind: ExprKind::Name(ident.clone()),
                    span,
                };
                let (lhs, rhs) = if op == BinaryOp::Neq {
                    (
                        var,
                        Expr {
                            kind: ExprKind::Null,
                            span,
                        },
                    )
                } else {
                    (int_lit(0, span), var)
                };
                let fact = binary(op, lhs, rhs);
                implied.push(Clause {
                    kind: if kind == RoutineKind::Kernel {
                        ClauseKind::ContextEverywhere(fact)
                    } else {
                        ClauseKind::Requires(fact)
                    },
                    span,
                });
            }
            let param = Param {
                ty: ty.pvl(span),
                name: ident,
                span,
            };
            if ghost && kind == RoutineKind::Kernel {
                implied.push(Clause {
                    kind: ClauseKind::Given(param),
                    span,
                });
            } else {
                pvl_params.push(param);
            }
        }
        implied.extend(clauses);
        let return_type = match &sig.output {
            syn::ReturnType::Default => Type {
                kind: TypeKind::Void,
                span: name_span,
            },
            syn::ReturnType::Type(_, ty) => scalar(ty)?.pvl(self.spans.at(ty.span())),
        };
        let returns_value = matches!(sig.output, syn::ReturnType::Type(..));
        let (body, modifiers) = match kind {
            RoutineKind::Kernel => (
                MethodBody::Block(self.block(&item.block, Mode::Code, returns_value)?),
                Vec::new(),
            ),
            RoutineKind::Lemma => (
                MethodBody::Block(self.block(&item.block, Mode::Spec, false)?),
                Vec::new(),
            ),
            RoutineKind::Pure => (
                MethodBody::Expr(self.pure_body(&item.block)?),
                vec![crate::syntax::Modifier::Pure],
            ),
        };
        let end = match &body {
            MethodBody::Block(b) => b.span,
            MethodBody::Expr(e) => e.span,
            MethodBody::Abstract => name_span,
        };
        let span = name_span.to(end);
        Ok(Member {
            gpuopts: Vec::new(),
            contract: Contract { clauses: implied },
            kind: MemberKind::Method(Method {
                modifiers,
                return_type: Some(return_type),
                name: Ident {
                    name: sig.ident.to_string(),
                    span: name_span,
                },
                type_params: Vec::new(),
                params: pvl_params,
                body,
                span,
                is_run: false,
                model_member: None,
            }),
            span,
        })
    }

    /// The body of a pure function: one expression (`{ e }`).
    fn pure_body(&mut self, block: &syn::Block) -> Res<Expr> {
        let open = self.spans.at(block.brace_token.span.open());
        let [syn::Stmt::Expr(e, None)] = &block.stmts[..] else {
            return Err(syn::Error::new_spanned(
                block,
                "the body of a pure function is one expression",
            ));
        };
        let (mut value, _) = self.code(e, Mode::Spec)?;
        let close = self.spans.at(block.brace_token.span.close());
        value.span = open.to(value.span).to(close);
        Ok(value)
    }

    /// `#[decreases(e1, e2)]`: a termination measure (lexicographic).
    fn decreases_attr(&mut self, attr: &syn::Attribute) -> Res<Clause> {
        let syn::Meta::List(list) = &attr.meta else {
            return Err(syn::Error::new_spanned(
                attr,
                "write `#[decreases(measure)]`",
            ));
        };
        let at = self.spans.at(list.path.span());
        let end = list.delimiter.span().close();
        let mut measure = Vec::new();
        for part in split_commas(list.tokens.clone()) {
            measure.push(self.expr_tokens(part, end, Mode::Spec)?.0);
        }
        let span = measure.iter().fold(at, |s, e| s.to(e.span));
        Ok(Clause {
            kind: ClauseKind::Decreases(crate::syntax::Decreases::Measure(measure)),
            span,
        })
    }

    /// `#[requires(e1, e2)]`: one clause per expression.
    fn clause_attr(&mut self, attr: &syn::Attribute, kind: &str) -> Res<Vec<Clause>> {
        let syn::Meta::List(list) = &attr.meta else {
            return Err(syn::Error::new_spanned(
                attr,
                format!("write `#[{kind}(condition)]`"),
            ));
        };
        let at = self.spans.at(list.path.span());
        self.clauses_in(kind, at, list.tokens.clone(), list.delimiter.span().close())
    }

    fn clauses_in(
        &mut self,
        kind: &str,
        at: Span,
        tokens: TokenStream,
        end: RustSpan,
    ) -> Res<Vec<Clause>> {
        let mut out = Vec::new();
        for part in split_commas(tokens) {
            let (e, _) = self.expr_tokens(part, end, Mode::Spec)?;
            let span = at.to(e.span);
            let kind = match kind {
                "requires" => ClauseKind::Requires(e),
                "ensures" => ClauseKind::Ensures(e),
                "context" => ClauseKind::Context(e),
                "context_everywhere" => ClauseKind::ContextEverywhere(e),
                _ => ClauseKind::LoopInvariant(e),
            };
            out.push(Clause { kind, span });
        }
        Ok(out)
    }

    /// `#[thread(requires(..), ensures(..))]`, `#[barrier(context(..))]`: clauses named inside.
    fn nested_clauses(&mut self, attr: &syn::Attribute, allowed: &[&str]) -> Res<Vec<Clause>> {
        let syn::Meta::List(list) = &attr.meta else {
            return Err(syn::Error::new_spanned(
                attr,
                "write the clauses inside: `(requires(..), ensures(..))`",
            ));
        };
        self.spans.at(list.path.span());
        let mut out = Vec::new();
        for part in split_commas(list.tokens.clone()) {
            let mut trees = part.clone().into_iter();
            let (Some(TokenTree::Ident(kw)), Some(TokenTree::Group(g)), None) =
                (trees.next(), trees.next(), trees.next())
            else {
                return Err(syn::Error::new_spanned(
                    part,
                    format!("expected a clause: {}", allowed.join("(..), ")),
                ));
            };
            let kw_s = kw.to_string();
            if g.delimiter() != Delimiter::Parenthesis || !allowed.contains(&kw_s.as_str()) {
                return Err(syn::Error::new(
                    kw.span(),
                    format!("expected one of: {}", allowed.join(", ")),
                ));
            }
            let at = self.spans.at(kw.span());
            out.extend(self.clauses_in(&kw_s, at, g.stream(), g.span_close())?);
        }
        Ok(out)
    }

    fn block(&mut self, b: &syn::Block, mode: Mode, value_is_result: bool) -> Res<Block> {
        let open = self.spans.at(b.brace_token.span.open());
        let saved = self.vars.clone();
        let mut stmts = Vec::new();
        let n = b.stmts.len();
        for (k, s) in b.stmts.iter().enumerate() {
            let is_tail = k + 1 == n && value_is_result;
            match self.stmt(s, mode, is_tail) {
                Ok(mut lowered) => stmts.append(&mut lowered),
                Err(e) => {
                    self.vars = saved;
                    return Err(e);
                }
            }
        }
        self.vars = saved;
        let close = self.spans.at(b.brace_token.span.close());
        Ok(Block {
            stmts,
            span: open.to(close),
        })
    }

    fn code(&mut self, e: &syn::Expr, mode: Mode) -> Res<(Expr, RustTy)> {
        let end = last_span(e);
        self.expr_tokens(e.to_token_stream(), end, mode)
    }

    fn stmt(&mut self, s: &syn::Stmt, mode: Mode, is_tail: bool) -> Res<Vec<Stmt>> {
        match s {
            syn::Stmt::Local(local) => self.local(local, mode).map(|s| vec![s]),
            syn::Stmt::Macro(m) => {
                no_helpers(&m.attrs)?;
                self.macro_stmt(&m.mac, mode)
            }
            syn::Stmt::Expr(e, semi) => {
                if semi.is_none()
                    && !matches!(
                        e,
                        syn::Expr::If(_)
                            | syn::Expr::While(_)
                            | syn::Expr::ForLoop(_)
                            | syn::Expr::Block(_)
                    )
                {
                    if !is_tail {
                        return Err(syn::Error::new_spanned(
                            e,
                            "a value at the end of a block is only supported as the kernel's \
                             result (write `return` or end the statement with `;`)",
                        ));
                    }
                    let at = self.spans.at(e.span());
                    let (value, ty) = self.code(e, mode)?;
                    let result = self.result.clone();
                    self.unify_with(&value, &ty, &result);
                    let span = at.to(value.span);
                    return Ok(vec![stmt(StmtKind::Return(Some(value)), span)]);
                }
                let lowered = self.expr_stmt(e, mode)?;
                let mut stmts = std::mem::take(&mut self.gpuopts_before);
                stmts.push(lowered);
                Ok(stmts)
            }
            syn::Stmt::Item(item) => Err(syn::Error::new_spanned(
                item,
                "items inside a kernel are not supported",
            )),
        }
    }

    /// A `let`'s `#[local]`, where it may go: on `let t = vec![0; n];` in the
    /// kernel's own code, outside par blocks and ghost code. Any other helper is an error.
    fn local_memory(&self, local: &syn::Local, mode: Mode) -> Res<Option<TokenStream>> {
        let (marks, others): (Vec<_>, Vec<_>) = local
            .attrs
            .iter()
            .partition(|a| helper_name(a) == Some("local"));
        no_helpers(&others.into_iter().cloned().collect::<Vec<_>>())?;
        let Some(attr) = marks.first() else {
            return Ok(None);
        };
        let refuse = |why: &str| Err(syn::Error::new_spanned(attr, why));
        if marks.len() > 1 {
            return refuse("`#[local]` twice");
        }
        if !matches!(attr.meta, syn::Meta::Path(_)) {
            return refuse("`#[local]` takes no arguments");
        }
        let is_vec = local.init.as_ref().is_some_and(
            |init| matches!(&*init.expr, syn::Expr::Macro(m) if m.mac.path.is_ident("vec")),
        );
        if mode != Mode::Code || !self.pars.is_empty() || !is_vec {
            return refuse(
                "`#[local]` goes on a work-group array the kernel allocates before a par block: \
                 `#[local] let t = vec![0; n];` in the kernel's code, outside par blocks and \
                 ghost code",
            );
        }
        Ok(Some(attr.to_token_stream()))
    }

    fn unify_with(&mut self, e: &Expr, ty: &RustTy, want: &RustTy) {
        if *ty == RustTy::Unknown && want.is_integer() {
            self.refine(e, want);
        }
    }

    fn local(&mut self, local: &syn::Local, mode: Mode) -> Res<Stmt> {
        let marked_local = self.local_memory(local, mode)?;
        let at = self.spans.at(local.let_token.span);
        let (pat, declared) = match &local.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(rust_ty(&pt.ty)?)),
            p => (p, None),
        };
        let syn::Pat::Ident(ident) = pat else {
            return Err(syn::Error::new_spanned(
                pat,
                "a kernel's `let` binds one name",
            ));
        };
        if ident.by_ref.is_some() || ident.subpat.is_some() {
            return Err(syn::Error::new_spanned(
                pat,
                "a kernel's `let` binds one name",
            ));
        }
        let name = ident.ident.to_string();
        let name_span = self.spans.at(ident.ident.span());
        let init = match &local.init {
            None => None,
            Some(init) => {
                if let Some((_, diverge)) = &init.diverge {
                    return Err(syn::Error::new_spanned(
                        diverge,
                        "`let .. else` in a kernel",
                    ));
                }
                Some(match &*init.expr {
                    syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                        self.vec_literal(&m.mac)?
                    }
                    e => self.code(e, mode)?,
                })
            }
        };
        let mut ty = match (&declared, &init) {
            (Some(t), Some((e, ety))) => {
                self.unify_with(e, ety, t);
                t.clone()
            }
            (Some(t), None) => t.clone(),
            (None, Some((_, t))) => t.clone(),
            (None, None) => {
                return Err(syn::Error::new_spanned(
                    pat,
                    "a `let` without a value needs a type",
                ))
            }
        };
        if ty == RustTy::Unknown {
            if let Some((e, _)) = &init {
                let mut roots = Vec::new();
                self.unknown_roots(e, &mut roots);
                self.link(std::slice::from_ref(&name), &roots);
            }
            ty = self.inferred.get(&name).cloned().unwrap_or(RustTy::Unknown);
        }
        self.declare(&name, &ident.ident)?;
        if mode == Mode::Code {
            self.local_types.push(ty.clone());
        }
        if let Some(at) = marked_local {
            self.local_arrays.push((name.clone(), at));
        }
        self.vars.insert(
            name.clone(),
            Var {
                ty: ty.clone(),
                mutable: ident.mutability.is_some(),
                ghost: mode == Mode::Spec,
            },
        );
        let end = self.spans.at(local.semi_token.span);
        let pvl_ty = if ty == RustTy::Unknown {
            RustTy::I32.pvl(name_span)
        } else {
            ty.pvl(name_span)
        };
        Ok(stmt(
            StmtKind::LocalDecl {
                ty: pvl_ty,
                vars: vec![LocalVar {
                    name: Ident {
                        name,
                        span: name_span,
                    },
                    span: name_span.to(init.as_ref().map_or(name_span, |(e, _)| e.span)),
                    init: init.map(|(e, _)| e),
                }],
            },
            at.to(end),
        ))
    }

    /// `vec![0; n]` (also `vec![false; n]`): a fresh zeroed array of `n` cells.
    fn vec_literal(&mut self, mac: &syn::Macro) -> Res<(Expr, RustTy)> {
        let at = self.spans.at(mac.path.span());
        let parts: Vec<TokenStream> = {
            let mut trees: Vec<TokenTree> = mac.tokens.clone().into_iter().collect();
            match trees
                .iter()
                .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
            {
                Some(k) => {
                    let rest = trees.split_off(k + 1);
                    trees.pop();
                    vec![trees.into_iter().collect(), rest.into_iter().collect()]
                }
                None => Vec::new(),
            }
        };
        let [value, size] = &parts[..] else {
            return Err(syn::Error::new_spanned(
                mac,
                "an array in a kernel is `vec![0; n]` (zeroed, `n` cells)",
            ));
        };
        let end = mac.delimiter.span().close();
        let (value, vty) = self.expr_tokens(value.clone(), end, Mode::Code)?;
        let zero = match &value.kind {
            ExprKind::IntLit(n) => *n == BigUint::from(0u8),
            ExprKind::BoolLit(b) => !b,
            _ => false,
        };
        if !zero {
            return Err(self.spans.error(
                value.span,
                "a kernel's arrays start zeroed: write `vec![0; n]` or `vec![false; n]`",
            ));
        }
        let (size, sty) = self.expr_tokens(size.clone(), end, Mode::Code)?;
        self.unify_with(&size, &sty, &RustTy::Usize);
        let elem = if vty == RustTy::Bool {
            RustTy::Bool
        } else if vty == RustTy::Unknown {
            RustTy::I32
        } else {
            vty
        };
        let close = self.spans.at(end);
        Ok((
            Expr {
                kind: ExprKind::NewArray {
                    elem: elem.pvl(at),
                    dims: vec![size],
                },
                span: at.to(close),
            },
            RustTy::Slice(Box::new(elem)),
        ))
    }

    /// `assert!(c)` and `ghost! { .. }` in statement position.
    fn macro_stmt(&mut self, mac: &syn::Macro, mode: Mode) -> Res<Vec<Stmt>> {
        let at = self.spans.at(mac.path.span());
        let end = mac.delimiter.span().close();
        if mac.path.is_ident("assert") {
            let Some(cond) = split_commas(mac.tokens.clone()).into_iter().next() else {
                return Err(syn::Error::new_spanned(mac, "`assert!` needs a condition"));
            };
            let (cond, _) = self.expr_tokens(cond, end, mode)?;
            let close = self.spans.at(end);
            let span = at.to(close);
            if mode == Mode::Spec {
                return Ok(vec![stmt(StmtKind::Assert(cond), span)]);
            }
            // Rust evaluates the condition (so it is executable code, checked like any other)
            // and panics where it is false: `if (!c) { assert false; }` proves it never is.
            let fails = Expr {
                span: cond.span,
                kind: ExprKind::Unary {
                    op: crate::syntax::UnaryOp::Not,
                    operand: Box::new(cond),
                },
            };
            let never = stmt(
                StmtKind::Assert(Expr {
                    kind: ExprKind::BoolLit(false),
                    span,
                }),
                span,
            );
            return Ok(vec![stmt(
                StmtKind::If {
                    cond: fails,
                    then_branch: Box::new(stmt(
                        StmtKind::Block(Block {
                            stmts: vec![never],
                            span,
                        }),
                        span,
                    )),
                    else_branch: None,
                },
                span,
            )]);
        }
        if mac.path.is_ident("ghost") {
            // One ghost statement per statement, not a block: a ghost `let` stays in scope
            // for the specifications after it (a loop invariant, say).
            let body = syn::parse::Parser::parse2(syn::Block::parse_within, mac.tokens.clone())?;
            let mut stmts = Vec::new();
            for s in &body {
                for lowered in self.stmt(s, Mode::Spec, false)? {
                    let span = lowered.span;
                    stmts.push(stmt(StmtKind::Ghost(Box::new(lowered)), span));
                }
            }
            self.spans.at(end);
            let _ = at;
            return Ok(stmts);
        }
        Err(syn::Error::new_spanned(
            &mac.path,
            "only `assert!` and `ghost!` are supported as statements in kernels",
        ))
    }

    fn expr_stmt(&mut self, e: &syn::Expr, mode: Mode) -> Res<Stmt> {
        if mode == Mode::Spec {
            let runs = match e {
                syn::Expr::ForLoop(f) => matches!(&*f.expr, syn::Expr::Call(_)),
                syn::Expr::Call(c) => is_barrier_call(c),
                syn::Expr::Return(_) => true,
                _ => false,
            };
            if runs {
                return Err(syn::Error::new_spanned(
                    e,
                    "ghost code has no par blocks, barriers or returns",
                ));
            }
        }
        match e {
            syn::Expr::Assign(a) => {
                no_helpers(&a.attrs)?;
                let (target, tty) = self.code(&a.left, mode)?;
                self.assignable(&target, mode)?;
                let (value, vty) = self.code(&a.right, mode)?;
                self.unify(&target, &tty, &value, &vty);
                let span = target.span.to(value.span);
                Ok(stmt(StmtKind::Assign { target, value }, span))
            }
            syn::Expr::Binary(b) if compound(&b.op).is_some() => {
                no_helpers(&b.attrs)?;
                let op = compound(&b.op).expect("checked");
                let (target, tty) = self.code(&b.left, mode)?;
                self.assignable(&target, mode)?;
                self.spans.at(b.op.span());
                let (rhs, rty) = self.code(&b.right, mode)?;
                let ty = self.unify(&target, &tty, &rhs, &rty);
                let value = binary(op, target.clone(), rhs);
                if mode == Mode::Code && ty.is_unsigned() {
                    self.unsigned.insert(value.span);
                }
                let span = value.span;
                Ok(stmt(StmtKind::Assign { target, value }, span))
            }
            syn::Expr::If(i) => {
                no_helpers(&i.attrs)?;
                let at = self.spans.at(i.if_token.span);
                let (cond, _) = self.code(&i.cond, mode)?;
                let then_block = self.block(&i.then_branch, mode, false)?;
                let then_span = then_block.span;
                let else_branch = match &i.else_branch {
                    None => None,
                    Some((_, e)) => Some(Box::new(match &**e {
                        syn::Expr::Block(b) if b.label.is_none() => {
                            let block = self.block(&b.block, mode, false)?;
                            let span = block.span;
                            stmt(StmtKind::Block(block), span)
                        }
                        other => self.expr_stmt(other, mode)?,
                    })),
                };
                let end = else_branch.as_ref().map_or(then_span, |s| s.span);
                Ok(stmt(
                    StmtKind::If {
                        cond,
                        then_branch: Box::new(stmt(StmtKind::Block(then_block), then_span)),
                        else_branch,
                    },
                    at.to(end),
                ))
            }
            syn::Expr::While(w) => {
                if let Some(l) = &w.label {
                    return Err(syn::Error::new_spanned(l, "loop labels in a kernel"));
                }
                let (contract, opts) = self.loop_contract(&w.attrs)?;
                let at = self.spans.at(w.while_token.span);
                let (cond, _) = self.code(&w.cond, mode)?;
                let body = self.block(&w.body, mode, false)?;
                let span = at.to(body.span);
                if !opts.is_empty() {
                    let var = self.while_variable(&cond, &body, &w.attrs)?;
                    self.loop_gpuopts(opts, var);
                }
                Ok(stmt(
                    StmtKind::While {
                        contract,
                        cond,
                        body: Box::new(stmt(StmtKind::Block(body.clone()), body.span)),
                    },
                    span,
                ))
            }
            syn::Expr::ForLoop(f) => self.for_loop(f, mode),
            syn::Expr::Block(b) if b.label.is_none() => {
                no_helpers(&b.attrs)?;
                let block = self.block(&b.block, mode, false)?;
                let span = block.span;
                Ok(stmt(StmtKind::Block(block), span))
            }
            syn::Expr::Return(r) => {
                no_helpers(&r.attrs)?;
                let at = self.spans.at(r.return_token.span);
                let value = match &r.expr {
                    None => None,
                    Some(e) => {
                        let (v, ty) = self.code(e, mode)?;
                        let result = self.result.clone();
                        self.unify_with(&v, &ty, &result);
                        Some(v)
                    }
                };
                let span = value.as_ref().map_or(at, |v| at.to(v.span));
                Ok(stmt(StmtKind::Return(value), span))
            }
            syn::Expr::Call(c) if is_barrier_call(c) => self.barrier(c),
            syn::Expr::Macro(m) => {
                no_helpers(&m.attrs)?;
                let stmts = self.macro_stmt(&m.mac, mode)?;
                let span = stmts
                    .iter()
                    .map(|s| s.span)
                    .reduce(Span::to)
                    .unwrap_or_default();
                Ok(match <[Stmt; 1]>::try_from(stmts) {
                    Ok([one]) => one,
                    Err(many) => stmt(StmtKind::Block(Block { stmts: many, span }), span),
                })
            }
            syn::Expr::Call(_) => {
                let (call, _) = self.code(e, mode)?;
                let span = call.span;
                Ok(stmt(StmtKind::Expr(call), span))
            }
            other => Err(syn::Error::new_spanned(
                other,
                "this statement is not supported in kernels (assignments, `let`, `if`, `while`, \
                 `for .. in lo..hi`, `for tid in par(lo..hi)`, `barrier()`, `return`, \
                 `assert!`, `ghost!` are)",
            )),
        }
    }

    /// A new name: PVL has no shadowing, and one name for two variables would make the PVL
    /// mean something else than the Rust.
    fn declare(&self, name: &str, at: &proc_macro2::Ident) -> Res<()> {
        if self.vars.contains_key(name) {
            return Err(syn::Error::new(
                at.span(),
                format!("`{name}` is declared already: shadowing is not supported in kernels (rename it)"),
            ));
        }
        Ok(())
    }

    /// A name or an array cell; parameters and `let`s without `mut` are not assignable
    /// (rustc says so too, but the proof must not assume otherwise). Ghost code assigns ghost
    /// locals only: the CPU function leaves it out, so it must not change what runs.
    fn assignable(&mut self, target: &Expr, mode: Mode) -> Res<()> {
        match &target.kind {
            ExprKind::Name(id) => match self.vars.get(&id.name) {
                Some(v) if !v.mutable => Err(self
                    .spans
                    .error(target.span, format!("`{}` is not mutable", id.name))),
                Some(v) if mode == Mode::Spec && !v.ghost => Err(self.spans.error(
                    target.span,
                    format!(
                        "ghost code cannot assign `{}`, which the kernel runs with",
                        id.name
                    ),
                )),
                _ => Ok(()),
            },
            ExprKind::Index { .. } if mode == Mode::Code => Ok(()),
            ExprKind::Index { .. } => Err(self.spans.error(
                target.span,
                "ghost code cannot write arrays the kernel runs with",
            )),
            _ => Err(self
                .spans
                .error(target.span, "only locals and array cells are assigned")),
        }
    }

    /// A loop's invariants, and its `#[gpuopt(loop_unroll(K))]` / `iter_merge(M)` requests.
    fn loop_contract(&mut self, attrs: &[syn::Attribute]) -> Res<(Contract, Vec<LoopOpt>)> {
        let mut clauses = Vec::new();
        let mut opts = Vec::new();
        for attr in attrs {
            match helper_name(attr) {
                Some("loop_invariant") => clauses.extend(self.clause_attr(attr, "loop_invariant")?),
                Some("gpuopt") => {
                    let (name, args, span) = self.gpuopt_request(attr)?;
                    let merge = match name.as_str() {
                        "loop_unroll" => false,
                        "iter_merge" => true,
                        _ => {
                            return Err(syn::Error::new_spanned(
                                attr,
                                "a loop takes `#[gpuopt(loop_unroll(K))]` or \
                                 `#[gpuopt(iter_merge(M))]` (tiling and fusion go on a par block)",
                            ))
                        }
                    };
                    let [factor] = args.as_slice() else {
                        return Err(syn::Error::new_spanned(
                            attr,
                            format!("write `#[gpuopt({name}(K))]`, K a positive literal"),
                        ));
                    };
                    let factor = self.positive_literal(factor)?;
                    opts.push(LoopOpt {
                        merge,
                        factor: int_lit(factor, span),
                        span,
                    });
                }
                Some(other) => {
                    return Err(syn::Error::new_spanned(
                        attr,
                        format!("`#[{other}]` does not go on a loop"),
                    ))
                }
                None => {}
            }
        }
        Ok((Contract { clauses }, opts))
    }

    /// `#[gpuopt(name(args..))]`: the name, the arguments, and the attribute's span.
    fn gpuopt_request(&mut self, attr: &syn::Attribute) -> Res<(String, Vec<syn::Expr>, Span)> {
        let first = self.spans.at(attr.pound_token.span);
        let last = self.spans.at(attr.bracket_token.span.close());
        let span = first.to(last);
        let usage = || {
            syn::Error::new_spanned(
                attr,
                "write `#[gpuopt(loop_unroll(K))]`, `iter_merge(M)`, `tile(inter, T)`, \
                 `tile(intra, T)` or `fuse(F)`",
            )
        };
        let request: syn::Expr = attr.parse_args().map_err(|_| usage())?;
        let syn::Expr::Call(call) = request else {
            return Err(usage());
        };
        let syn::Expr::Path(path) = &*call.func else {
            return Err(usage());
        };
        let Some(name) = path.path.get_ident() else {
            return Err(usage());
        };
        Ok((name.to_string(), call.args.into_iter().collect(), span))
    }

    /// A `gpuopt` number: a positive integer literal (as in PVL's `gpuopt` lines).
    fn positive_literal(&self, e: &syn::Expr) -> Res<u64> {
        match e {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) => match n.base10_parse::<u64>() {
                Ok(k) if k > 0 && k <= u64::from(u32::MAX) => Ok(k),
                _ => Err(syn::Error::new_spanned(e, "a positive number")),
            },
            _ => Err(syn::Error::new_spanned(
                e,
                "a positive integer literal (the optimisation's factor is fixed when it is applied)",
            )),
        }
    }

    /// The loop variable a `while` loop's `gpuopt` means: the one name its guard reads that
    /// its body assigns (`while i < n { ..; i += 1; }`).
    fn while_variable(&self, cond: &Expr, body: &Block, attrs: &[syn::Attribute]) -> Res<Ident> {
        let mut read = BTreeSet::new();
        cond.names(&mut read);
        let body = stmt(StmtKind::Block(body.clone()), body.span);
        let assigned: BTreeSet<String> = body
            .assigned_locals()
            .into_iter()
            .map(|a| a.name)
            .filter(|n| read.contains(n))
            .collect();
        let mut names = assigned.into_iter();
        match (names.next(), names.next()) {
            (Some(name), None) => {
                let mut span = cond.span;
                cond.visit(&mut |e| {
                    if matches!(&e.kind, ExprKind::Name(id) if id.name == name) {
                        span = e.span;
                    }
                });
                Ok(Ident { name, span })
            }
            _ => Err(syn::Error::new_spanned(
                &attrs[0],
                "`#[gpuopt(..)]` on a `while` loop needs one loop variable: a name the guard \
                 reads and the body assigns (write the loop as `for i in lo..hi`, or keep one \
                 such name)",
            )),
        }
    }

    /// The `gpuopt` statements of a loop's requests over `var`, to go right before it.
    fn loop_gpuopts(&mut self, opts: Vec<LoopOpt>, var: Ident) {
        for o in opts {
            let kind = if o.merge {
                GpuOptKind::IterMerge {
                    var: var.clone(),
                    factor: o.factor,
                }
            } else {
                GpuOptKind::LoopUnroll {
                    var: var.clone(),
                    factor: o.factor,
                }
            };
            self.gpuopts_before.push(stmt(
                StmtKind::GpuOpt(GpuOpt { kind, span: o.span }),
                o.span,
            ));
        }
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop, mode: Mode) -> Res<Stmt> {
        if let Some(l) = &f.label {
            return Err(syn::Error::new_spanned(l, "loop labels in a kernel"));
        }
        let syn::Pat::Ident(var) = &*f.pat else {
            return Err(syn::Error::new_spanned(
                &f.pat,
                "a kernel's `for` binds one name",
            ));
        };
        let (is_par, range) = match &*f.expr {
            syn::Expr::Call(c)
                if matches!(&*c.func, syn::Expr::Path(p) if p.path.is_ident("par"))
                    && c.args.len() == 1 =>
            {
                (true, &c.args[0])
            }
            other => (false, other),
        };
        let syn::Expr::Range(range) = range else {
            return Err(syn::Error::new_spanned(
                &f.expr,
                "a kernel's `for` runs over `lo..hi` or `par(lo..hi)`",
            ));
        };
        let (Some(lo), Some(hi), syn::RangeLimits::HalfOpen(_)) =
            (&range.start, &range.end, &range.limits)
        else {
            return Err(syn::Error::new_spanned(
                range,
                "write the range as `lo..hi`",
            ));
        };
        if is_par {
            return self.par(f, var, lo, hi);
        }
        let (contract, opts) = self.loop_contract(&f.attrs)?;
        let at = self.spans.at(f.for_token.span);
        let name = var.ident.to_string();
        let name_span = self.spans.at(var.ident.span());
        let (lo, lty) = self.code(lo, mode)?;
        let (hi, hty) = self.code(hi, mode)?;
        let mut ty = self.unify(&lo, &lty, &hi, &hty);
        if ty == RustTy::Unknown {
            let mut roots = Vec::new();
            self.unknown_roots(&lo, &mut roots);
            self.unknown_roots(&hi, &mut roots);
            self.link(std::slice::from_ref(&name), &roots);
            ty = self.inferred.get(&name).cloned().unwrap_or(RustTy::Unknown);
        }
        self.declare(&name, &var.ident)?;
        if mode == Mode::Code {
            self.local_types.push(ty.clone());
        }
        // Rust evaluates the end once; the PVL loop tests it every iteration: the same value
        // only if nothing it reads can change.
        self.constant_bound(&hi)?;
        let saved = self.vars.clone();
        self.vars.insert(
            name.clone(),
            Var {
                ty: ty.clone(),
                mutable: false,
                ghost: mode == Mode::Spec,
            },
        );
        let body = self.block(&f.body, mode, false);
        self.vars = saved;
        let body = body?;
        let var_expr = Expr {
            kind: ExprKind::Name(Ident {
                name: name.clone(),
                span: name_span,
            }),
            span: name_span,
        };
        let next = binary(BinaryOp::Add, var_expr.clone(), int_lit(1, name_span));
        if mode == Mode::Code && ty.is_unsigned() {
            self.unsigned.insert(next.span);
        }
        let pvl_ty = if ty == RustTy::Unknown {
            RustTy::I32
        } else {
            ty
        };
        self.loop_gpuopts(
            opts,
            Ident {
                name: name.clone(),
                span: name_span,
            },
        );
        Ok(stmt(
            StmtKind::For {
                contract,
                init: Some(Box::new(stmt(
                    StmtKind::LocalDecl {
                        ty: pvl_ty.pvl(name_span),
                        vars: vec![LocalVar {
                            name: Ident {
                                name,
                                span: name_span,
                            },
                            span: name_span.to(lo.span),
                            init: Some(lo),
                        }],
                    },
                    name_span,
                ))),
                cond: Some(binary(BinaryOp::Lt, var_expr.clone(), hi)),
                update: Some(Box::new(stmt(
                    StmtKind::Assign {
                        target: var_expr,
                        value: next,
                    },
                    name_span,
                ))),
                body: Box::new(stmt(StmtKind::Block(body.clone()), body.span)),
            },
            at.to(body.span),
        ))
    }

    /// The end of a sequential range: literals, lengths and names nothing assigns.
    fn constant_bound(&self, e: &Expr) -> Res<()> {
        let mut bad = None;
        e.visit(&mut |x| match &x.kind {
            ExprKind::Name(id) if self.vars.get(&id.name).is_some_and(|v| v.mutable) => {
                bad.get_or_insert(x.span);
            }
            ExprKind::Index { .. } | ExprKind::Call { .. } => {
                bad.get_or_insert(x.span);
            }
            _ => {}
        });
        match bad {
            Some(span) => Err(self.spans.error(
                span,
                "the end of a `for` range must not change while the loop runs: bind it to an \
                 immutable `let` first",
            )),
            None => Ok(()),
        }
    }

    fn par(
        &mut self,
        f: &syn::ExprForLoop,
        var: &syn::PatIdent,
        lo: &syn::Expr,
        hi: &syn::Expr,
    ) -> Res<Stmt> {
        let name = var.ident.to_string();
        self.declare(&name, &var.ident)?;
        self.local_types.push(RustTy::Usize);
        let saved = self.vars.clone();
        // The thread contract speaks of the thread's own variable: lower it in its scope (the
        // attributes come first in the source, so they are numbered first).
        self.vars.insert(
            name.clone(),
            Var {
                ty: RustTy::Usize,
                mutable: false,
                ghost: false,
            },
        );
        let mut thread_contract = Contract::default();
        let mut gpuopts = Vec::new();
        for attr in &f.attrs {
            match helper_name(attr) {
                Some("thread") => thread_contract.clauses.extend(self.nested_clauses(
                    attr,
                    &["requires", "ensures", "context", "context_everywhere"],
                )?),
                Some("gpuopt") => gpuopts.push(self.par_gpuopt(attr)?),
                Some(other) => {
                    return Err(syn::Error::new_spanned(
                        attr,
                        format!(
                            "`#[{other}]` does not go on a par block (`#[thread(..)]` and \
                             `#[gpuopt(tile(..))]`, `#[gpuopt(fuse(..))]` do)"
                        ),
                    ))
                }
                None => {}
            }
        }
        let inner = std::mem::replace(&mut self.vars, saved.clone());
        let at = self.spans.at(f.for_token.span);
        let name_span = self.spans.at(var.ident.span());
        let (lo, lty) = self.code(lo, Mode::Code)?;
        let (hi, hty) = self.code(hi, Mode::Code)?;
        self.unify(&lo, &lty, &hi, &hty);
        self.par_count += 1;
        let label = format!("threads{}", self.par_count);
        self.vars = inner;
        self.pars.push(label.clone());
        let body = self.block(&f.body, Mode::Code, false);
        self.pars.pop();
        self.vars = saved;
        let body = body?;
        let span = at.to(body.span);
        self.gpuopts_before.extend(gpuopts);
        Ok(stmt(
            StmtKind::Par(ParGroup {
                blocks: vec![ParBlock {
                    label: Some(Ident {
                        name: label,
                        span: at,
                    }),
                    iters: vec![ParIter {
                        ty: Type {
                            kind: TypeKind::Int,
                            span: name_span,
                        },
                        name: Ident {
                            name,
                            span: name_span,
                        },
                        span: name_span.to(hi.span),
                        lo,
                        hi,
                    }],
                    contract: thread_contract,
                    body,
                    span,
                }],
                style: ParGroupStyle::And,
            }),
            span,
        ))
    }

    /// A par block's `#[gpuopt(tile(inter|intra, T))]` or `#[gpuopt(fuse(F))]` (`fuse(F, B)`:
    /// on B work-groups), as the `gpuopt` statement right before it.
    fn par_gpuopt(&mut self, attr: &syn::Attribute) -> Res<Stmt> {
        let (name, args, span) = self.gpuopt_request(attr)?;
        let kind =
            match (name.as_str(), args.as_slice()) {
                ("tile", [layout, size]) => {
                    let layout = match layout {
                        syn::Expr::Path(p) if p.path.is_ident("inter") => TileLayout::Inter,
                        syn::Expr::Path(p) if p.path.is_ident("intra") => TileLayout::Intra,
                        other => {
                            return Err(syn::Error::new_spanned(other, "`inter` or `intra`"));
                        }
                    };
                    GpuOptKind::Tile {
                        layout,
                        size: int_lit(self.positive_literal(size)?, span),
                    }
                }
                ("fuse", [count]) | ("fuse", [count, _]) => GpuOptKind::Fuse {
                    count: int_lit(self.positive_literal(count)?, span),
                    block_hint: match args.get(1) {
                        Some(b) => Some(int_lit(self.positive_literal(b)?, span)),
                        None => None,
                    },
                },
                _ => return Err(syn::Error::new_spanned(
                    attr,
                    "a par block takes `#[gpuopt(tile(inter, T))]`, `#[gpuopt(tile(intra, T))]` \
                     or `#[gpuopt(fuse(F))]` (loop unrolling and merging go on a loop)",
                )),
            };
        Ok(stmt(StmtKind::GpuOpt(GpuOpt { kind, span }), span))
    }

    /// `#[barrier(requires(..), ensures(..))] barrier();`
    fn barrier(&mut self, c: &syn::ExprCall) -> Res<Stmt> {
        let mut contract = Contract::default();
        for attr in &c.attrs {
            match helper_name(attr) {
                Some("barrier") => contract
                    .clauses
                    .extend(self.nested_clauses(attr, &["requires", "ensures", "context"])?),
                Some(other) => {
                    return Err(syn::Error::new_spanned(
                        attr,
                        format!("`#[{other}]` does not go on a barrier"),
                    ))
                }
                None => {}
            }
        }
        let at = self.spans.at(c.func.span());
        let close = self.spans.at(c.paren_token.span.close());
        let Some(label) = self.pars.last().cloned() else {
            return Err(syn::Error::new_spanned(
                c,
                "`barrier()` outside a par block",
            ));
        };
        let span = at.to(close);
        Ok(stmt(
            StmtKind::Barrier(Barrier {
                label: Ident { name: label, span },
                invariants: Vec::new(),
                contract,
                body: Block {
                    stmts: Vec::new(),
                    span,
                },
                style: BarrierStyle::ClausesBefore,
            }),
            span,
        ))
    }
}

fn is_barrier_call(c: &syn::ExprCall) -> bool {
    c.args.is_empty() && matches!(&*c.func, syn::Expr::Path(p) if p.path.is_ident("barrier"))
}

fn compound(op: &syn::BinOp) -> Option<BinaryOp> {
    Some(match op {
        syn::BinOp::AddAssign(_) => BinaryOp::Add,
        syn::BinOp::SubAssign(_) => BinaryOp::Sub,
        syn::BinOp::MulAssign(_) => BinaryOp::Mul,
        syn::BinOp::DivAssign(_) => BinaryOp::Div,
        syn::BinOp::RemAssign(_) => BinaryOp::Mod,
        _ => return None,
    })
}

/// A helper attribute where none belongs.
fn no_helpers(attrs: &[syn::Attribute]) -> Res<()> {
    match attrs.iter().find_map(|a| helper_name(a).map(|h| (a, h))) {
        Some((a, h)) => Err(syn::Error::new_spanned(
            a,
            format!("`#[{h}]` does not go here"),
        )),
        None => Ok(()),
    }
}

/// The span of an expression's last token (where "expected .." at its end points).
fn last_span(e: &syn::Expr) -> RustSpan {
    let mut last = e.span();
    for t in e.to_token_stream() {
        last = match &t {
            TokenTree::Group(g) => g.span_close(),
            other => other.span(),
        };
    }
    last
}
