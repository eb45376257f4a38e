//! Proc-macro attributes for verified GPU kernels written in Rust: `#[alpinist::kernel]`.
//!
//! A shim: the expansion is `alpinist_core::rust` (ordinary library code, unit-tested there).
//! Users depend on the `alpinist` package, which re-exports these attributes.

use proc_macro::TokenStream;

/// Lowers the function to PVL, verifies it with alpinist's checker at compile time, and emits
/// the CPU function and a module of the same name (`PVL`, `VERIFIED`, `SOURCE_HASH`). Contracts
/// go in helper attributes below it: `#[requires(..)]`, `#[ensures(..)]`, `#[context(..)]`,
/// `#[context_everywhere(..)]`; in the body `#[loop_invariant(..)]`, `#[thread(..)]` on
/// `for tid in par(lo..hi)`, `#[barrier(..)] barrier();`, `#[ghost]` parameters and
/// `ghost! { .. }`, and `#[gpuopt(loop_unroll(K))]` & co. on loops and par blocks (applied after
/// verification, the result reverified). `ALPINIST_VERIFY=0` skips verification; a kernel that
/// verified is recorded in the verified-method cache and not proved again while it is
/// unchanged (`ALPINIST_CACHE=0`: proved every time).
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    alpinist_core::rust::expand_kernel(
        attr.into(),
        item.into(),
        alpinist_core::rust::Checking::from_env(),
    )
    .into()
}

/// A module of kernels with the `#[alpinist::pure]` functions and `#[alpinist::lemma]`s their
/// specifications and ghost code use: all verified together; each kernel expands as under
/// `#[alpinist::kernel]`, the pure functions and lemmas (ghost) are left out.
#[proc_macro_attribute]
pub fn module(attr: TokenStream, item: TokenStream) -> TokenStream {
    alpinist_core::rust::expand_module(
        attr.into(),
        item.into(),
        alpinist_core::rust::Checking::from_env(),
    )
    .into()
}

/// `include_pvl!("kernels/k.pvl")`: the methods of an existing PVL file (its path relative to
/// the crate's root) as Rust functions, verified when the crate compiles (in the 32-bit mode:
/// PVL's `int` is `i32`) and optimised by its `gpuopt` lines: per method Rust can call (`int`,
/// `boolean` and arrays of them as `i32`, `bool`, `&mut [i32]`, `&mut [bool]`), a CPU function
/// that runs it on alpinist's interpreter after checking its entry precondition, and a module of
/// the same name with `PVL`, `VERIFIED`, `SOURCE_HASH`, `OPENCL_SOURCE` and the launcher.
#[proc_macro]
pub fn include_pvl(input: TokenStream) -> TokenStream {
    alpinist_core::rust::expand_include_pvl(input.into(), alpinist_core::rust::Checking::from_env())
        .into()
}

/// Contract attributes expanded on their own were written above `#[alpinist::kernel]` (or
/// without it): an error that says so.
macro_rules! misplaced {
    ($($name:ident),*) => {$(
        #[doc = concat!("A clause of `#[alpinist::kernel]`, written below it: `#[", stringify!($name), "(..)]`.")]
        #[proc_macro_attribute]
        pub fn $name(attr: TokenStream, item: TokenStream) -> TokenStream {
            alpinist_core::rust::misplaced_helper(stringify!($name), attr.into(), item.into()).into()
        }
    )*};
}

misplaced!(
    requires,
    ensures,
    context,
    context_everywhere,
    pure,
    lemma,
    decreases
);
