//! What `alpinist::include_pvl!("kernels/k.pvl")` expands to: the methods of an existing PVL
//! file as Rust functions, with the API `#[alpinist::kernel]` gives a kernel written in Rust.
//!
//! The file (its path relative to the crate's root, `CARGO_MANIFEST_DIR`) is parsed, checked
//! and verified when the crate compiles, in the 32-bit mode (PVL's `int` becomes Rust's `i32`
//! and OpenCL's `int`, so every integer operation must stay within 32 bits) and through the
//! verified-method cache; its `gpuopt` lines are applied and the result reverified, as for
//! `#[gpuopt(..)]`. Errors are `compile_error!`s at the macro's path literal, each naming the
//! file's line and column. Then, per method that Rust can call — not pure, with a body, not a
//! constructor, a name unique in the file and parameters and result `int`, `boolean`, `int[]`
//! or `boolean[]` (as `i32`, `bool`, and `&[i32]`, `&[bool]` for an array the method only reads
//! cells of, else `&mut [i32]`, `&mut [bool]`) —:
//! - a CPU function of the method's name: it checks that the arguments satisfy the entry
//!   precondition (`interp::call::admitted`: the inputs the proof covers; else it panics) and
//!   runs the method on alpinist's interpreter (`interp::call::run_on_cpu`), copying the
//!   slices' final cells back;
//! - a module of the same name with `PVL`, `VERIFIED`, `SOURCE_HASH`, `OPENCL_SOURCE` and the
//!   launcher, as `expand.rs` emits them.
//!
//! The file is also named in an `include_bytes!`, so that cargo rebuilds when it changes. The
//! expansion is a function of the file's text, its path as written and whether verification is
//! on (no absolute paths, no times).

use std::path::Path;

use proc_macro2::TokenStream;
use quote::quote;

use crate::cache::ItemKey;
use crate::syntax::{
    line_col, Block, Expr, ExprKind, MemberKind, Method, MethodBody, Modifier, Span, StmtKind,
    TypeKind,
};
use crate::verify::{Int32, Limits};

use super::expand::{
    diagnose, fnv1a, host_call, kernel_module, launcher_item, method_kernels, optimise, Checking,
    HostParam, KernelVerdict,
};
use super::lower::RustTy;

const USAGE: &str = "`include_pvl!` takes the path of a PVL file relative to the crate's root: \
                     `alpinist::include_pvl!(\"kernels/k.pvl\")`";

/// The expansion of `include_pvl!(input)`, the path relative to `CARGO_MANIFEST_DIR`.
pub fn expand_include_pvl(input: TokenStream, checking: impl Into<Checking>) -> TokenStream {
    let root = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
    expand_include_pvl_in(Path::new(&root), input, checking)
}

/// [`expand_include_pvl`] with the path relative to `root`.
pub fn expand_include_pvl_in(
    root: &Path,
    input: TokenStream,
    checking: impl Into<Checking>,
) -> TokenStream {
    let checking = checking.into();
    let lit: syn::LitStr = match syn::parse2(input.clone()) {
        Ok(lit) => lit,
        Err(_) => return syn::Error::new_spanned(input, USAGE).to_compile_error(),
    };
    let relative = lit.value();
    let text = match std::fs::read_to_string(root.join(&relative)) {
        Ok(text) => text,
        Err(e) => {
            return syn::Error::new(
                lit.span(),
                format!("cannot read `{relative}` (relative to the crate's root): {e}"),
            )
            .to_compile_error()
        }
    };
    let at = |span: Span, message: String| {
        let (line, col) = line_col(&text, span.start as usize);
        syn::Error::new(lit.span(), format!("{relative}:{line}:{col}: {message}"))
    };
    // Cargo tracks the file through this (a proc macro's own reads are invisible to it).
    let mut out = quote! {
        const _: &[u8] = ::core::include_bytes!(::core::concat!(
            ::core::env!("CARGO_MANIFEST_DIR"), "/", #relative
        ));
    };
    let program = match crate::syntax::parse(&text) {
        Ok(parsed) => parsed.program,
        Err(errors) => {
            for e in errors {
                let code = miette::Diagnostic::code(&e).map_or(String::new(), |c| format!("{c}: "));
                let span = e.span().unwrap_or_default();
                out.extend(at(span, format!("{code}{e}")).to_compile_error());
            }
            return out;
        }
    };
    let verify = checking.verify;
    let cached = checking.cache.as_ref().filter(|_| verify).map(|cache| {
        let key = ItemKey::new(
            &format!("include_pvl\n{text}"),
            &format!("{:?}, 32-bit mode", Limits::in_process()),
        );
        let hit = cache.lookup_item(&key);
        (cache, key, hit)
    });
    let (errors, pvl) = match cached {
        Some((_, _, Some(pvl))) => (Vec::new(), pvl),
        _ => {
            let mut errors = diagnose(&program, &Int32::default(), verify, &at);
            let mut pvl = text.clone();
            if errors.is_empty() && verify {
                match optimise(&program, &at) {
                    Ok(Some(optimised)) => pvl = optimised,
                    Ok(None) => {}
                    Err(e) => errors.push(e),
                }
            }
            if let Some((cache, key, None)) = &cached {
                if errors.is_empty() {
                    cache.store_item(key, &pvl);
                }
            }
            (errors, pvl)
        }
    };
    let verdict = KernelVerdict::of(&errors, verify);
    out.extend(errors.iter().map(syn::Error::to_compile_error));
    let hash = fnv1a(text.as_bytes());
    for (path, method) in callable(&program) {
        out.extend(host_items(&path, method, &pvl, verdict, hash));
    }
    out
}

/// The methods Rust can call, with the name the interpreter and the code generator know them
/// by (`Class.name` in a class).
fn callable(program: &crate::syntax::Program) -> Vec<(String, &Method)> {
    let mut found: Vec<(String, &Method)> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for (class, member) in program.members() {
        let MemberKind::Method(m) = &member.kind else {
            continue;
        };
        names.push(&m.name.name);
        let runs = matches!(m.body, MethodBody::Block(_))
            && !m.modifiers.contains(&Modifier::Pure)
            && m.return_type.is_some()
            && m.model_member.is_none();
        if runs && signature(m).is_some() {
            let path = match class {
                Some(c) => format!("{}.{}", c.name.name, m.name.name),
                None => m.name.name.clone(),
            };
            found.push((path, m));
        }
    }
    found.retain(|(_, m)| names.iter().filter(|n| **n == m.name.name).count() == 1);
    found
}

/// The Rust types of a method's parameters and result, where Rust can pass them.
fn signature(m: &Method) -> Option<(Vec<RustTy>, Option<RustTy>)> {
    let scalar = |kind: &TypeKind| match kind {
        TypeKind::Int => Some(RustTy::I32),
        TypeKind::Bool => Some(RustTy::Bool),
        _ => None,
    };
    let params = m
        .params
        .iter()
        .map(|p| match &p.ty.kind {
            TypeKind::Array { elem, .. } => scalar(&elem.kind).map(|e| RustTy::Slice(Box::new(e))),
            other => scalar(other),
        })
        .collect::<Option<Vec<_>>>()?;
    let result = match m.return_type.as_ref().map(|t| &t.kind) {
        None | Some(TypeKind::Void) => None,
        Some(kind) => Some(scalar(kind)?),
    };
    Some((params, result))
}

/// Whether the method's body may write the cells of its array parameter `name` or let the array
/// escape (pass it to a call, assign or return it): only where every use of the name is a cell
/// read `name[i]` or `name.length` is it read-only, and its Rust parameter a `&[T]`, whose cells
/// are not copied back. Conservative: passing it to a pure function counts as an escape, and a
/// local of the same name as a use of the parameter.
fn may_write(body: &Block, name: &str) -> bool {
    let is_name = |e: &Expr| matches!(&e.kind, ExprKind::Name(id) if id.name == name);
    let is_cell = |e: &Expr| matches!(&e.kind, ExprKind::Index { base, .. } if is_name(base));
    let (mut uses, mut reads, mut written) = (0, 0, false);
    for s in &body.stmts {
        s.visit(&mut |s| {
            if let StmtKind::Assign { target: t, .. }
            | StmtKind::Increment(t)
            | StmtKind::Decrement(t) = &s.kind
            {
                written |= is_cell(t);
            }
            s.for_each_expr(&mut |e| {
                e.visit(&mut |x| match &x.kind {
                    ExprKind::Name(_) if is_name(x) => uses += 1,
                    ExprKind::Index { base, .. } if is_name(base) => reads += 1,
                    ExprKind::Field { base, name: field }
                        if field.name == "length" && is_name(base) =>
                    {
                        reads += 1
                    }
                    _ => {}
                })
            });
        });
    }
    written || uses != reads
}

/// A Rust identifier for a PVL name (raw where it is a Rust keyword), or none.
fn rust_ident(name: &str) -> Option<syn::Ident> {
    match syn::parse_str::<syn::Ident>(name) {
        Ok(id) => Some(id),
        Err(_) if !matches!(name, "self" | "Self" | "super" | "crate" | "_") => {
            syn::parse_str::<syn::Ident>(&format!("r#{name}")).ok()
        }
        Err(_) => None,
    }
}

/// The CPU function and the module of one method.
fn host_items(
    path: &str,
    method: &Method,
    pvl: &str,
    verdict: KernelVerdict,
    hash: u64,
) -> TokenStream {
    let (Some((tys, result)), Some(name)) = (signature(method), rust_ident(&method.name.name))
    else {
        return TokenStream::new();
    };
    let mut params = Vec::new();
    let mut inputs = Vec::new();
    for (p, ty) in method.params.iter().zip(tys) {
        let Some(id) = rust_ident(&p.name.name) else {
            return TokenStream::new();
        };
        let written = match (&ty, &method.body) {
            (RustTy::Slice(_), MethodBody::Block(body)) => may_write(body, &p.name.name),
            _ => false,
        };
        let elem = match &ty {
            RustTy::Slice(e) if **e == RustTy::Bool => Some(quote!(bool)),
            RustTy::Slice(_) => Some(quote!(i32)),
            _ => None,
        };
        inputs.push(match (elem, written) {
            (Some(elem), true) => quote!(#id: &mut [#elem]),
            (Some(elem), false) => quote!(#id: &[#elem]),
            (None, _) if ty == RustTy::Bool => quote!(#id: bool),
            (None, _) => quote!(#id: i32),
        });
        params.push(HostParam {
            copied_back: written,
            id,
            ty,
        });
    }
    let output: syn::ReturnType = match result {
        None => syn::parse_quote!(),
        Some(RustTy::Bool) => syn::parse_quote!(-> bool),
        Some(_) => syn::parse_quote!(-> i32),
    };
    let inputs = quote!(#(#inputs),*);
    let message = format!("alpinist: `{path}`: {{}}");
    let fail = quote!(.unwrap_or_else(|e| ::core::panic!(#message, e)));
    let (args, copy_back, result) = host_call(&params, &output, &fail);
    let tail = match output {
        syn::ReturnType::Default => TokenStream::new(),
        syn::ReturnType::Type(..) => result,
    };
    let doc = format!(
        "`{path}` of the PVL file (after its `gpuopt` optimisations, as verified: `{name}::PVL`), \
         run on alpinist's interpreter; panics where the arguments are outside its entry \
         precondition (the proof covers no such run)."
    );
    let launch_doc = format!(
        "Runs `{path}` (as verified: `PVL`) on an OpenCL device, its host code on alpinist's \
         interpreter; panics where the arguments are outside its entry precondition. Generates \
         and compiles the program at each call."
    );
    let checks =
        [quote!(::alpinist::interp::call::admitted(PVL, #path, ::std::vec![#(#args),*])?;)];
    let launcher = launcher_item(path, &inputs, &params, &output, &checks, &launch_doc);
    let module = kernel_module(
        &syn::parse_quote!(pub),
        &name,
        pvl,
        verdict,
        hash,
        &method_kernels(pvl, path),
        Some(launcher),
    );
    quote! {
        #[doc = #doc]
        #[allow(non_snake_case, clippy::too_many_arguments)]
        pub fn #name(#inputs) #output {
            use ::alpinist::interp::call::{run_on_cpu, Arg};
            let ran = run_on_cpu(#name::PVL, #path, ::std::vec![#(#args),*]) #fail;
            #(#copy_back)*
            #tail
        }
        #module
    }
}
