//! What `#[alpinist::kernel]` expands to (the proc-macro crate only forwards its tokens here).
//!
//! Lower the item, `check` it, verify it with the checker (in-process, under Z3's `rlimit` only,
//! so the verdict does not depend on the machine's load), then emit:
//! - the CPU function (`cpu.rs`) under the user's name and signature minus ghost parameters;
//! - a module of the same name (the type namespace, as CubeCL does) with `PVL` (the lowered
//!   program as text: `alpinist verify` re-checks it outside the build), `VERIFIED` and
//!   `SOURCE_HASH`;
//! - on any error: `compile_error!`s at the tokens of the failing clause or operation, with the
//!   code, the message and Z3's values, *followed by* the items above, so that the rest of the
//!   crate still type-checks and one mistake gives one error.
//!
//! `ALPINIST_VERIFY=0` skips Z3 (`VERIFIED` says `Skipped`); so does rust-analyzer's proc-macro
//! server, which sets `RUST_ANALYZER_INTERNALS_DO_NOT_USE` (verification on every keystroke,
//! and a libz3 crash would take the server down). The expansion is a pure function of the
//! tokens and that switch: no times, paths or hash-map order.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};

use crate::cache::{ItemKey, MethodCache};
use crate::pipeline::{self, PlanError, Stop};
use crate::syntax::{print, Program, Span, Trivia};
use crate::verify::{self, Int32, Limits, Status};

use super::cpu::{cpu_function, entry_checks, inputs_without_ghosts};
use super::lower::{alpinist_attr, lower_routines, Lowered, RoutineKind, RustTy};
use crate::opencl::codegen::{IntWidth, MethodKernels};

/// How the kernel came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelVerdict {
    Verified,
    /// Verification was switched off (`ALPINIST_VERIFY=0`, rust-analyzer).
    Skipped,
    /// An error was reported (the build fails; the items are emitted so that it fails once).
    Failed,
}

impl KernelVerdict {
    /// The verdict of an expansion that reported `errors`, verifying or not.
    pub(super) fn of(errors: &[syn::Error], verify: bool) -> KernelVerdict {
        match (errors.is_empty(), verify) {
            (false, _) => KernelVerdict::Failed,
            (true, true) => KernelVerdict::Verified,
            (true, false) => KernelVerdict::Skipped,
        }
    }
}

/// Whether to run the checker: `ALPINIST_VERIFY=0` and rust-analyzer switch it off.
pub fn verification_enabled() -> bool {
    std::env::var_os("RUST_ANALYZER_INTERNALS_DO_NOT_USE").is_none()
        && std::env::var("ALPINIST_VERIFY").map_or(true, |v| v != "0")
}

/// How an expansion checks its item: whether it verifies, and the verified-method cache it
/// consults (its item entries, [`crate::cache::ItemKey`]) and fills. A `bool` is "verify, or
/// not", without a cache.
#[derive(Clone, Debug, Default)]
pub struct Checking {
    pub verify: bool,
    pub cache: Option<MethodCache>,
}

impl Checking {
    /// What the environment asks for: [`verification_enabled`], and the cache of
    /// [`MethodCache::from_env`] (`ALPINIST_CACHE=0`: none), named — and its folder pruned —
    /// once per process: rustc expands every kernel of a crate in one process.
    pub fn from_env() -> Checking {
        static CACHE: std::sync::OnceLock<Option<MethodCache>> = std::sync::OnceLock::new();
        let verify = verification_enabled();
        Checking {
            verify,
            cache: verify
                .then(|| CACHE.get_or_init(MethodCache::from_env).clone())
                .flatten(),
        }
    }
}

impl From<bool> for Checking {
    fn from(verify: bool) -> Checking {
        Checking {
            verify,
            cache: None,
        }
    }
}

/// The expansion of `#[alpinist::kernel]` on `item`, verifying as `checking` says.
pub fn expand_kernel(
    attr: TokenStream,
    item: TokenStream,
    checking: impl Into<Checking>,
) -> TokenStream {
    let checking = checking.into();
    let hash = fnv1a(item.to_string().as_bytes());
    let func = match parse_or_refuse::<syn::ItemFn>(
        item,
        "`#[alpinist::kernel]` goes on a function (`fn name(..) { .. }`)",
    ) {
        Ok(f) => f,
        Err(refusal) => return refusal,
    };
    let mut errors = no_arguments("kernel", attr);
    let (found, items) = expand_routines(&[(RoutineKind::Kernel, func)], &checking, hash);
    errors.extend(found);
    let mut out: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    out.extend(items);
    out
}

/// The expansion of `#[alpinist::module]`: its `#[alpinist::kernel]`s, `#[alpinist::pure]`
/// functions and `#[alpinist::lemma]`s form one program (kernels may use the others in their
/// specifications and ghost code), verified together; each kernel becomes its CPU function and
/// module, the pure functions and lemmas (ghost) are left out, every other item stays.
pub fn expand_module(
    attr: TokenStream,
    item: TokenStream,
    checking: impl Into<Checking>,
) -> TokenStream {
    let checking = checking.into();
    let hash = fnv1a(item.to_string().as_bytes());
    const WHERE: &str = "`#[alpinist::module]` goes on a module with a body (`mod name { .. }`)";
    let module = match parse_or_refuse::<syn::ItemMod>(item.clone(), WHERE) {
        Ok(m) if m.content.is_some() => m,
        Ok(_) => return refuse(item, WHERE),
        Err(refusal) => return refusal,
    };
    let mut errors = no_arguments("module", attr);
    let mut routines = Vec::new();
    let mut others = Vec::new();
    for it in module
        .content
        .as_ref()
        .map_or(&[][..], |(_, items)| &items[..])
    {
        match it {
            syn::Item::Fn(f) => match routine_kind(f) {
                Some(kind) => {
                    let mut f = f.clone();
                    f.attrs.retain(|a| routine_attr(a).is_none());
                    routines.push((kind, f));
                }
                None => others.push(it.to_token_stream()),
            },
            other => others.push(other.to_token_stream()),
        }
    }
    let (found, items) = expand_routines(&routines, &checking, hash);
    errors.extend(found);
    let attrs = &module.attrs;
    let vis = &module.vis;
    let name = &module.ident;
    let mut out: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    out.extend(quote! {
        #(#attrs)*
        #vis mod #name {
            #(#others)*
            #items
        }
    });
    out
}

/// The item an attribute goes on, or (`Err`) the error that it does not, followed by the item
/// unchanged.
fn parse_or_refuse<T: syn::parse::Parse>(
    item: TokenStream,
    message: &str,
) -> Result<T, TokenStream> {
    syn::parse2::<T>(item.clone()).map_err(|_| refuse(item, message))
}

/// The error that an attribute does not go on `item`, followed by the item unchanged.
fn refuse(item: TokenStream, message: &str) -> TokenStream {
    let mut out = syn::Error::new_spanned(&item, message).to_compile_error();
    out.extend(item);
    out
}

fn no_arguments(what: &str, attr: TokenStream) -> Vec<syn::Error> {
    if attr.is_empty() {
        return Vec::new();
    }
    vec![syn::Error::new_spanned(
        attr,
        format!(
            "`#[alpinist::{what}]` takes no arguments (contracts go in `#[requires(..)]` and its \
             siblings below the function's attribute)"
        ),
    )]
}

/// `kernel`, `pure` or `lemma` (bare or as `alpinist::..`).
fn routine_attr(a: &syn::Attribute) -> Option<RoutineKind> {
    match alpinist_attr(a)?.as_str() {
        "kernel" => Some(RoutineKind::Kernel),
        "pure" => Some(RoutineKind::Pure),
        "lemma" => Some(RoutineKind::Lemma),
        _ => None,
    }
}

fn routine_kind(f: &syn::ItemFn) -> Option<RoutineKind> {
    f.attrs.iter().find_map(routine_attr)
}

/// Lowers, checks and verifies the routines together; the errors, and the items of the kernels
/// (CPU function and module each).
fn expand_routines(
    routines: &[(RoutineKind, syn::ItemFn)],
    checking: &Checking,
    hash: u64,
) -> (Vec<syn::Error>, TokenStream) {
    let verify = checking.verify;
    let mut errors = Vec::new();
    let refs: Vec<(RoutineKind, &syn::ItemFn)> = routines.iter().map(|(k, f)| (*k, f)).collect();
    let (lowered, pvl) = match lower_routines(&refs) {
        Err(e) => {
            errors.push(e);
            (None, String::new())
        }
        Ok(lowered) => {
            let pvl = print(&lowered.program, &Trivia::default());
            // The cache: the program as the checker receives it, under the macros' limits.
            let cached = checking.cache.as_ref().filter(|_| verify).map(|cache| {
                let key = ItemKey::new(
                    &format!("{:?}\nunsigned {:?}", lowered.program, lowered.unsigned),
                    &format!("{:?}, 32-bit mode", Limits::in_process()),
                );
                let hit = cache.lookup_item(&key);
                (cache, key, hit)
            });
            if let Some((_, _, Some(pvl))) = cached {
                // Verified (and optimised) before, exactly this program: nothing to report.
                return emit_routines(routines, Some(&lowered), &pvl, errors, verify, hash);
            }
            let at = |span: Span, message: String| lowered.spans.error(span, message);
            let mode = Int32 {
                exempt: BTreeSet::new(),
                unsigned: lowered.unsigned.clone(),
            };
            errors.extend(diagnose(&lowered.program, &mode, verify, &at));
            // `PVL` must be the program that was verified, as `alpinist verify` reads it: a
            // Rust name that is a PVL keyword (`write`, `label`, ..) would print as something
            // else, or not parse.
            let same = crate::syntax::parse(&pvl).is_ok_and(|back| {
                crate::syntax::spanless(&back.program) == crate::syntax::spanless(&lowered.program)
            });
            if !same {
                let at = routines
                    .first()
                    .map_or(proc_macro2::Span::call_site(), |(_, f)| f.sig.ident.span());
                errors.push(syn::Error::new(
                    at,
                    "the kernel's PVL does not read back as the program that was lowered: is a \
                     name in it a PVL keyword (`write`, `read`, `seq`, `label`, ..)? Rename it",
                ));
            }
            // The `#[gpuopt(..)]` requests, once the kernel as written has verified.
            let pvl = match errors.is_empty() && verify {
                true => match optimise(&lowered.program, &at) {
                    Ok(Some(optimised)) => optimised,
                    Ok(None) => pvl,
                    Err(e) => {
                        errors.push(e);
                        pvl
                    }
                },
                false => pvl,
            };
            if let Some((cache, key, None)) = &cached {
                if errors.is_empty() {
                    cache.store_item(key, &pvl);
                }
            }
            (Some(lowered), pvl)
        }
    };
    emit_routines(routines, lowered.as_ref(), &pvl, errors, verify, hash)
}

/// The items of the kernels (CPU function and module each) after `errors`, the verdict saying
/// whether there were any.
fn emit_routines(
    routines: &[(RoutineKind, syn::ItemFn)],
    lowered: Option<&Lowered>,
    pvl: &str,
    mut errors: Vec<syn::Error>,
    verify: bool,
    hash: u64,
) -> (Vec<syn::Error>, TokenStream) {
    let mut cpus = Vec::new();
    for (k, (kind, func)) in routines.iter().enumerate() {
        if *kind == RoutineKind::Kernel {
            let (cpu, cpu_errors) = cpu_function(func, lowered.map(|l| (l, k)));
            errors.extend(cpu_errors);
            let kernels = method_kernels(pvl, &func.sig.ident.to_string());
            if let Some(lowered) = lowered {
                errors.extend(local_memory_refused(&lowered.local_arrays[k], &kernels));
            }
            let launcher = lowered.and_then(|l| launcher(func, l, k, &kernels));
            cpus.push((func, cpu, kernels, launcher));
        }
    }
    let verdict = KernelVerdict::of(&errors, verify);
    let mut out = TokenStream::new();
    for (func, cpu, kernels, launcher) in cpus {
        out.extend(cpu.into_token_stream());
        let name = &func.sig.ident;
        out.extend(kernel_module(
            &func.vis, name, pvl, verdict, hash, &kernels, launcher,
        ));
    }
    (errors, out)
}

/// Where an error about a span of the program goes: the Rust tokens it came from (a kernel), or
/// the macro's input naming the file, with the file's line and column (`include_pvl!`).
pub(super) type At<'a> = &'a dyn Fn(Span, String) -> syn::Error;

/// Every error about the program: `check`'s, then (when verifying) the checker's in the 32-bit
/// `mode`, each where `at` puts it.
pub(super) fn diagnose(program: &Program, mode: &Int32, verify: bool, at: At) -> Vec<syn::Error> {
    if let Err(errors) = crate::check::check(program) {
        return errors
            .iter()
            .map(|e| {
                let code = miette::Diagnostic::code(e).map_or(String::new(), |c| format!("{c}: "));
                at(e.span(), format!("{code}{e}"))
            })
            .collect();
    }
    if !verify {
        return Vec::new();
    }
    // The default budget: `rlimit` only, no wall clock (verdicts must not depend on load);
    // inside rustc, without model-based instantiation (a libz3 crash would end the build).
    let limits = Limits::in_process();
    let mut out = Vec::new();
    for report in verify::verify_program_with(program, &limits, Some(mode), 1) {
        if let Some(e) = &report.error {
            out.push(at(e.span(), format!("{}: {e}", e.code_str())));
        }
        for ob in &report.obligations {
            let note = ob
                .note
                .as_ref()
                .map_or(String::new(), |n| format!(" ({n})"));
            match &ob.status {
                Status::Verified => {}
                Status::Failed { model } => {
                    let values = if model.is_empty() {
                        String::new()
                    } else {
                        let v: Vec<String> =
                            model.iter().map(|(n, v)| format!("{n} = {v}")).collect();
                        format!("; for example {}", v.join(", "))
                    };
                    out.push(at(
                        ob.span,
                        format!("{}: {}{note}{values}", ob.kind.code(), ob.kind.describe()),
                    ));
                }
                Status::Unknown { reason } => out.push(at(
                    ob.span,
                    format!(
                        "E0620: not verified: Z3 could not decide whether {}{note} ({reason})",
                        ob.kind.describe()
                    ),
                )),
            }
        }
    }
    out
}

/// Applies the program's `gpuopt` statements (from `#[gpuopt(..)]`) through the
/// optimisation pipeline, each after its applicability check, reverifying every step in the
/// 32-bit mode (the optimised kernel's integers must stay within `i32`, as the generated OpenCL
/// needs; the unsigned obligations belong to the Rust code, which the CPU function runs as
/// written): the optimised program's text, `None` without requests, or the refusal at the
/// tokens it concerns.
pub(super) fn optimise(program: &Program, at: At) -> Result<Option<String>, syn::Error> {
    let mut requested = false;
    program.visit_stmts(&mut |s| {
        requested |= matches!(s.kind, crate::syntax::StmtKind::GpuOpt(_));
    });
    if !requested {
        return Ok(None);
    }
    let requests = pipeline::plan(program, Vec::new(), None).map_err(|e| {
        let span = match &e {
            PlanError::Annotation { gpuopt, .. }
            | PlanError::MethodLevelLoop { gpuopt }
            | PlanError::TileTarget { gpuopt, .. }
            | PlanError::NotBefore { gpuopt, .. } => *gpuopt,
            PlanError::LoopVariable { target, .. } => *target,
            _ => Span::default(),
        };
        at(span, e.message(&|_| "this attribute".into()))
    })?;
    // The kernel as written was verified by `diagnose`, with its unsigned obligations.
    let settings = pipeline::Settings {
        verify: true,
        verify_input: false,
        limits: Limits::in_process(),
        jobs: 1,
        cache: None,
        int32: Some(Int32::default()),
    };
    let not_verified = |what: &str, v: &pipeline::Verification, span: Span| {
        let failed: Vec<String> = v
            .reports
            .iter()
            .flat_map(|r| &r.obligations)
            .filter(|o| o.status != Status::Verified)
            .map(|o| format!("{}: {}", o.kind.code(), o.kind.describe()))
            .chain(
                v.reports
                    .iter()
                    .filter_map(|r| r.error.as_ref())
                    .map(|e| e.to_string()),
            )
            .collect();
        at(
            span,
            format!(
                "{what} ({})",
                failed.first().map_or("no verdict", |f| f.as_str())
            ),
        )
    };
    match pipeline::run(program, &Trivia::default(), &requests, &settings) {
        // The failing obligation's span is in the printed text the pipeline verified: the
        // error goes on the request that produced it.
        Ok(done) => match &done.after {
            Some(after) if after.outcome() != verify::Outcome::Verified => Err(not_verified(
                "the kernel this optimisation produced does not verify; where that is a 32-bit \
                 overflow (E0623), its own arithmetic (a tile's bounds, ..) needs the sizes \
                 bounded in the contract, otherwise it is a bug of the optimisation: please \
                 report it",
                after,
                done.steps
                    .last()
                    .and_then(|s| s.request.gpuopt)
                    .unwrap_or_default(),
            )),
            _ => Ok(Some(done.text)),
        },
        Err(Stop::Refused { refusal, .. }) => {
            let code =
                miette::Diagnostic::code(&*refusal).map_or(String::new(), |c| format!("{c}: "));
            let help =
                miette::Diagnostic::help(&*refusal).map_or(String::new(), |h| format!(" ({h})"));
            Err(at(refusal.span(), format!("{code}{refusal}{help}")))
        }
        // The input is not verified again (`verify_input`), so that is never the stop.
        Err(
            Stop::InputNotVerified { .. }
            | Stop::OutputDoesNotParse { .. }
            | Stop::OutputDoesNotCheck { .. },
        ) => Err(at(
            Span::default(),
            "the optimised kernel does not parse or type-check, a bug of the \
             optimisation: please report it"
                .into(),
        )),
    }
}

/// An error at each `#[local]` whose array the code generation did not put in work-group
/// local memory (`marked`: the arrays and their attributes).
fn local_memory_refused(
    marked: &[(String, TokenStream)],
    kernels: &Result<MethodKernels, String>,
) -> Vec<syn::Error> {
    marked
        .iter()
        .filter_map(|(name, at)| {
            let message = match kernels {
                Ok(k) if k.local_arrays.contains(name) => return None,
                Ok(_) => format!(
                    "`{name}` cannot live in work-group local memory: an array does when one par \
                     block alone uses it, a block with a barrier (one work-group) later in the \
                     same block of code as the `let`, and nothing else in the kernel mentions \
                     it (no other block, no code after the launch, no ghost code)"
                ),
                Err(why) => format!(
                    "`{name}` cannot live in work-group local memory: the kernel has no OpenCL \
                     code ({why})"
                ),
            };
            Some(syn::Error::new_spanned(at, message))
        })
        .collect()
}

/// The OpenCL kernels of method `name` in `pvl` (the program that was verified last), one per
/// par block the host code reaches, or why the generator refuses them: `OPENCL_SOURCE`, and
/// whether the method can run on device buffers (`OnDevice`).
pub(super) fn method_kernels(pvl: &str, name: &str) -> Result<MethodKernels, String> {
    let program = crate::syntax::parse(pvl)
        .map_err(|_| "the kernel's PVL does not parse".to_string())?
        .program;
    crate::opencl::codegen::generate_method(&program, name, IntWidth::Bits32)
        .map_err(|e| e.to_string())
}

/// A parameter of a generated host function (a CPU function of `include_pvl!`, a launcher):
/// how the call passes it to the PVL method, and whether its cells come back.
pub(super) struct HostParam {
    pub id: syn::Ident,
    /// `Bool`, `Slice(elem)`, or an integer type.
    pub ty: RustTy,
    /// A `&mut` slice: its cells are copied back after the run.
    pub copied_back: bool,
}

/// The pieces of a host function that runs a PVL method on `params` (in order) and returns
/// what `output` says: the arguments (`Arg`s), the copying back of the `&mut` slices from
/// `ran` (each value converted to the cell's type, checked: the proof bounds it, a value outside
/// it is a bug and panics), and the result expression; `fail` follows each fallible call
/// (`?`, or an `unwrap_or_else` that panics).
pub(super) fn host_call(
    params: &[HostParam],
    output: &syn::ReturnType,
    fail: &TokenStream,
) -> (Vec<TokenStream>, Vec<TokenStream>, TokenStream) {
    let mut args = Vec::new();
    let mut copy_back = Vec::new();
    for (position, p) in params.iter().enumerate() {
        let id = &p.id;
        args.push(match &p.ty {
            RustTy::Bool => quote!(Arg::Bool(#id)),
            RustTy::Slice(elem) if **elem == RustTy::Bool => quote!(Arg::Bools(#id.to_vec())),
            RustTy::Slice(_) => quote!(Arg::Ints(#id.iter().map(|&v| v as i128).collect())),
            _ => quote!(Arg::Int(#id as i128)),
        });
        if p.copied_back {
            copy_back.push(match &p.ty {
                RustTy::Slice(e) if **e == RustTy::Bool => quote! {
                    #id.copy_from_slice(&ran.bools(#position));
                },
                _ => quote! {
                    for (cell, v) in #id.iter_mut().zip(ran.ints(#position)) {
                        *cell = ::core::convert::TryFrom::try_from(v)
                            .expect("alpinist: a cell outside its type, which the proof excludes");
                    }
                },
            });
        }
    }
    let result = match output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) if matches!(&**ty, syn::Type::Path(p) if p.path.is_ident("bool")) =>
        {
            quote!(ran.bool_result() #fail)
        }
        syn::ReturnType::Type(..) => quote! {
            ::core::convert::TryFrom::try_from(ran.int_result() #fail)
                .expect("alpinist: a result outside its type, which the proof excludes")
        },
    };
    (args, copy_back, result)
}

/// A launcher, `launch(device, <inputs>)`: checks the sizes the proof assumed (`checks`, as the
/// CPU function does), runs `method` of `PVL` on the device (`opencl::kernel_run`) and copies
/// the `&mut` slices back; expanded only where the `alpinist` package has its `opencl` feature
/// (`__if_opencl!`).
pub(super) fn launcher_item(
    method: &str,
    inputs: &TokenStream,
    params: &[HostParam],
    output: &syn::ReturnType,
    checks: &[TokenStream],
    doc: &str,
) -> TokenStream {
    let (args, copy_back, result) = host_call(params, output, &quote!(?));
    let output = match output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    quote! {
        ::alpinist::__if_opencl! {
            #[doc = #doc]
            pub fn launch(
                device: &::alpinist::opencl::platform::DeviceInfo,
                #inputs
            ) -> ::core::result::Result<#output, ::alpinist::opencl::kernel_run::LaunchError> {
                use ::alpinist::opencl::kernel_run::{run_on_device, Arg};
                #(#checks)*
                let ran = run_on_device(PVL, #method, device, ::std::vec![#(#args),*])?;
                #(#copy_back)*
                ::core::result::Result::Ok(#result)
            }
        }
    }
}

/// The launchers of kernel `k` of the lowered program: `launch` (its signature is the CPU
/// function's: ghost parameters are `given` names of the PVL, which only ghost code, never
/// run, reads) and, where its method is its par blocks alone and its arrays are `i32`,
/// `OnDevice` over `ocl` buffers.
fn launcher(
    func: &syn::ItemFn,
    lowered: &Lowered,
    k: usize,
    kernels: &Result<MethodKernels, String>,
) -> Option<TokenStream> {
    let lowered_params: Vec<_> = lowered
        .params
        .get(k)?
        .iter()
        .filter(|(_, _, ghost)| !ghost)
        .collect();
    let name = func.sig.ident.to_string();
    let inputs = inputs_without_ghosts(&func.sig);
    if inputs.len() != lowered_params.len() {
        return None;
    }
    let mut params = Vec::new();
    for (arg, (pname, ty, _)) in inputs.iter().zip(lowered_params) {
        let syn::FnArg::Typed(pt) = arg else {
            return None;
        };
        let copied_back = matches!(&*pt.ty, syn::Type::Reference(r)
            if r.mutability.is_some() && matches!(&*r.elem, syn::Type::Slice(_)));
        params.push(HostParam {
            id: format_ident!("{}", pname),
            ty: ty.clone(),
            copied_back,
        });
    }
    let doc = format!(
        "Runs `{name}` (after its `#[gpuopt(..)]` optimisations, as verified: `PVL`) on an OpenCL \
         device, its host code on alpinist's interpreter; panics where the CPU function does \
         (sizes the proof does not cover). Generates and compiles the program at each call; \
         `OnDevice` (where there is one) compiles once and keeps the arrays on the device."
    );
    let checks = entry_checks(&name, lowered, k);
    let mut out = launcher_item(
        &name,
        &inputs.to_token_stream(),
        &params,
        &func.sig.output,
        &checks,
        &doc,
    );
    if kernels.as_ref().is_ok_and(|k| k.device_only.is_some()) {
        let inputs: Vec<&syn::FnArg> = inputs.iter().collect();
        out.extend(on_device_item(&name, &inputs, &params, &checks));
    }
    Some(out)
}

/// `OnDevice`: the kernel compiled once for a queue (`new`), launched on `ocl` buffers the
/// caller keeps on the device (`enqueue`, which checks the sizes as the CPU function does).
/// `None` where an array is not `i32` (the device's `int` cells).
fn on_device_item(
    name: &str,
    inputs: &[&syn::FnArg],
    params: &[HostParam],
    checks: &[TokenStream],
) -> Option<TokenStream> {
    let mut device_inputs = Vec::new();
    let mut args = Vec::new();
    for (input, p) in inputs.iter().zip(params) {
        let id = &p.id;
        match &p.ty {
            RustTy::Slice(elem) if **elem == RustTy::I32 => {
                device_inputs.push(quote!(#id: &::alpinist::opencl::ocl::Buffer<i32>));
                args.push(quote!(DeviceArg::Ints(#id)));
            }
            RustTy::Slice(_) => return None,
            RustTy::Bool => {
                device_inputs.push(quote!(#input));
                args.push(quote!(DeviceArg::Bool(#id)));
            }
            _ => {
                device_inputs.push(quote!(#input));
                args.push(quote!(DeviceArg::Int(#id as i128)));
            }
        }
    }
    let doc = format!(
        "`{name}` compiled once for one device (as verified: `PVL`), launched on `ocl` buffers \
         that stay on the device: each par block in turn, with no copy and no host code."
    );
    let enqueue_doc = "Enqueues the kernel on the buffers (of the queue `new` was given, `i32` \
         cells) and returns: a read of a buffer on that queue waits for it. Panics where the \
         CPU function does (sizes the proof does not cover); the cells' values are the \
         caller's to keep within the precondition, as for the CPU function.";
    Some(quote! {
        ::alpinist::__if_opencl! {
            #[doc = #doc]
            pub struct OnDevice(::alpinist::opencl::kernel_run::DeviceKernel);

            impl OnDevice {
                /// Generates the kernel's OpenCL C and compiles it for the device of `queue`.
                pub fn new(
                    queue: &::alpinist::opencl::ocl::Queue,
                ) -> ::core::result::Result<Self, ::alpinist::opencl::kernel_run::LaunchError> {
                    ::alpinist::opencl::kernel_run::DeviceKernel::new(PVL, #name, queue).map(OnDevice)
                }

                #[doc = #enqueue_doc]
                #[allow(clippy::too_many_arguments)]
                pub fn enqueue(
                    &self,
                    #(#device_inputs),*
                ) -> ::core::result::Result<(), ::alpinist::opencl::kernel_run::LaunchError> {
                    use ::alpinist::opencl::kernel_run::DeviceArg;
                    #(#checks)*
                    self.0.enqueue(&[#(#args),*])
                }
            }
        }
    })
}

/// The module `name` beside a generated function: `PVL`, `VERIFIED`, `SOURCE_HASH`,
/// `OPENCL_SOURCE` (the source of `kernels`, or why there is none) and the launchers.
pub(super) fn kernel_module(
    vis: &syn::Visibility,
    name: &syn::Ident,
    pvl: &str,
    verdict: KernelVerdict,
    hash: u64,
    kernels: &Result<MethodKernels, String>,
    launcher: Option<TokenStream>,
) -> TokenStream {
    let opencl = match kernels {
        Ok(k) => {
            let source = &k.source;
            quote!(::core::result::Result::Ok(#source))
        }
        Err(why) => quote!(::core::result::Result::Err(#why)),
    };
    let verdict = format_ident!("{}", format!("{verdict:?}"));
    let doc = format!("What alpinist made of `{name}`.");
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis mod #name {
            /// The kernel as PVL, after its `#[gpuopt(..)]` optimisations (what was verified
            /// last): `alpinist verify` checks it again.
            pub const PVL: &str = #pvl;
            /// Whether the checker verified the kernel when it was compiled.
            pub const VERIFIED: ::alpinist::KernelVerdict = ::alpinist::KernelVerdict::#verdict;
            /// A hash of the item's tokens (FNV-1a).
            pub const SOURCE_HASH: u64 = #hash;
            /// The OpenCL C program of `PVL` (one kernel per par block the host code reaches,
            /// `int` for the integers), or why the generator refuses the kernel.
            pub const OPENCL_SOURCE: ::core::result::Result<&str, &str> = #opencl;
            #launcher
        }
    }
}

/// FNV-1a, 64 bits: stable across runs and platforms (std's hasher is neither promised).
pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The expansion of a contract attribute (`#[requires(..)]`, ..) that rustc expanded on its
/// own: it was written above `#[alpinist::kernel]` (which must come first, to see it), or with
/// no kernel at all. An error at the attribute, and the item without alpinist's attributes, so
/// that nothing is verified without the clause the user wrote.
pub fn misplaced_helper(helper: &str, attr: TokenStream, item: TokenStream) -> TokenStream {
    let message = if matches!(helper, "pure" | "lemma") {
        format!(
            "`#[alpinist::{helper}]` functions are ghost: put them in a `#[alpinist::module] mod \
             .. {{ }}` with the kernels that use them"
        )
    } else {
        format!(
            "`#[{helper}]` is read by `#[alpinist::kernel]` (or `#[alpinist::pure]`, \
             `#[alpinist::lemma]`), which must be the first attribute of the function: write \
             it above `#[{helper}]`"
        )
    };
    let mut out = syn::Error::new_spanned(attr, message).to_compile_error();
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(mut func) => {
            func.attrs
                .retain(|a| routine_attr(a) != Some(RoutineKind::Kernel));
            out.extend(cpu_function(&func, None).0.into_token_stream());
        }
        Err(_) => out.extend(item),
    }
    out
}
