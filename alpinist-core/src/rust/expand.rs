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

use crate::syntax::{print, Span, Trivia};
use crate::verify::{self, Int32, Limits, Status};

use super::cpu::cpu_function;
use super::lower::{lower_kernel, Lowered};

/// How the kernel came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelVerdict {
    Verified,
    /// Verification was switched off (`ALPINIST_VERIFY=0`, rust-analyzer).
    Skipped,
    /// An error was reported (the build fails; the items are emitted so that it fails once).
    Failed,
}

/// Whether to run the checker: `ALPINIST_VERIFY=0` and rust-analyzer switch it off.
pub fn verification_enabled() -> bool {
    std::env::var_os("RUST_ANALYZER_INTERNALS_DO_NOT_USE").is_none()
        && std::env::var("ALPINIST_VERIFY").map_or(true, |v| v != "0")
}

/// The expansion of `#[alpinist::kernel]` on `item`, verifying when `verify` is set.
pub fn expand_kernel(attr: TokenStream, item: TokenStream, verify: bool) -> TokenStream {
    let hash = fnv1a(item.to_string().as_bytes());
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new_spanned(
                &item,
                "`#[alpinist::kernel]` goes on a function (`fn name(..) { .. }`)",
            );
            let mut out = e.to_compile_error();
            out.extend(item);
            return out;
        }
    };
    let mut errors = Vec::new();
    if !attr.is_empty() {
        errors.push(syn::Error::new_spanned(
            attr,
            "`#[alpinist::kernel]` takes no arguments (contracts go in `#[requires(..)]` and \
             its siblings below it)",
        ));
    }
    let (lowered, pvl) = match lower_kernel(&func) {
        Err(e) => {
            errors.push(e);
            (None, String::new())
        }
        Ok(lowered) => {
            let pvl = print(&lowered.program, &Trivia::default());
            let mut found = diagnose(&lowered, verify);
            // `PVL` must be the program that was verified, as `alpinist verify` reads it: a
            // Rust name that is a PVL keyword (`write`, `label`, ..) would print as something
            // else, or not parse.
            let same = crate::syntax::parse(&pvl).is_ok_and(|back| {
                crate::syntax::spanless(&back.program) == crate::syntax::spanless(&lowered.program)
            });
            if !same {
                found.push(syn::Error::new(
                    func.sig.ident.span(),
                    "the kernel's PVL does not read back as the program that was lowered: is a \
                     name in it a PVL keyword (`write`, `read`, `seq`, `label`, ..)? Rename it",
                ));
            }
            errors.extend(found);
            (Some(lowered), pvl)
        }
    };
    let (cpu, cpu_errors) = cpu_function(&func, lowered.as_ref());
    errors.extend(cpu_errors);
    let verdict = if !errors.is_empty() {
        KernelVerdict::Failed
    } else if verify {
        KernelVerdict::Verified
    } else {
        KernelVerdict::Skipped
    };

    let module = kernel_module(&func, &pvl, verdict, hash);
    let mut out: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    out.extend(cpu.into_token_stream());
    out.extend(module);
    out
}

/// Every error about the lowered kernel: `check`'s, then (when verifying) the checker's, each at
/// the tokens it concerns.
fn diagnose(lowered: &Lowered, verify: bool) -> Vec<syn::Error> {
    let at = |span: Span, message: String| lowered.spans.error(span, message);
    if let Err(errors) = crate::check::check(&lowered.program) {
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
    let limits = Limits {
        rlimit: Limits::DEFAULT_RLIMIT,
        timeout_ms: None,
        mbqi: true,
    };
    let mode = Int32 {
        exempt: BTreeSet::new(),
        unsigned: lowered.unsigned.clone(),
    };
    let mut out = Vec::new();
    for report in verify::verify_program_with(&lowered.program, &limits, Some(&mode), 1) {
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

fn kernel_module(func: &syn::ItemFn, pvl: &str, verdict: KernelVerdict, hash: u64) -> TokenStream {
    let vis = &func.vis;
    let name = &func.sig.ident;
    let verdict = format_ident!("{}", format!("{verdict:?}"));
    let doc = format!("What `#[alpinist::kernel]` made of `{name}`.");
    quote! {
        #[doc = #doc]
        #[allow(dead_code)]
        #vis mod #name {
            /// The kernel as PVL (what was verified): `alpinist verify` checks it again.
            pub const PVL: &str = #pvl;
            /// Whether the checker verified the kernel when it was compiled.
            pub const VERIFIED: ::alpinist::KernelVerdict = ::alpinist::KernelVerdict::#verdict;
            /// A hash of the item's tokens (FNV-1a).
            pub const SOURCE_HASH: u64 = #hash;
        }
    }
}

/// FNV-1a, 64 bits: stable across runs and platforms (std's hasher is neither promised).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The expansion of a contract attribute (`#[requires(..)]`, ..) that rustc expanded on its
/// own: it was written above `#[alpinist::kernel]` (which must come first, to see it), or with
/// no kernel at all. An error at the attribute, and the item without alpinist's attributes, so
/// that nothing is verified without the clause the user wrote.
pub fn misplaced_helper(helper: &str, attr: TokenStream, item: TokenStream) -> TokenStream {
    let message = format!(
        "`#[{helper}]` is read by `#[alpinist::kernel]`, which must be the first attribute of \
         the function: put `#[alpinist::kernel]` above it"
    );
    let mut out = syn::Error::new_spanned(attr, message).to_compile_error();
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(mut func) => {
            func.attrs
                .retain(|a| a.path().segments.last().is_none_or(|s| s.ident != "kernel"));
            out.extend(cpu_function(&func, None).0.into_token_stream());
        }
        Err(_) => out.extend(item),
    }
    out
}
