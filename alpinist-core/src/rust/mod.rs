//! The Rust front end: kernels written as annotated Rust functions (`#[alpinist::kernel]`),
//! lowered into the same IR the PVL parser produces — nothing downstream knows which front end a
//! program came from.
//!
//! | Rust | PVL |
//! |---|---|
//! | `fn k(n: usize, a: &[i32], c: &mut [i32])` | `void k(int n, int[] a, int[] c)` with `context_everywhere 0 <= n; context_everywhere a != null; ..` |
//! | `#[ghost] xs: Seq<Int>` | `given seq<int> xs;` |
//! | `#[requires(e)]`, `#[ensures(e)]`, `#[context(e)]`, `#[context_everywhere(e)]` | the clause |
//! | `for tid in par(lo..hi)` with `#[thread(requires(..), ensures(..))]` | `par threadsK(int tid = lo .. hi) requires ..; ensures ..; { .. }` |
//! | `#[barrier(requires(..), ensures(..))] barrier();` | `barrier(threadsK) requires ..; ensures ..; { }` |
//! | `while c { .. }` with `#[loop_invariant(e)]` | `loop_invariant e; while (c) { .. }` |
//! | `for i in lo..hi { .. }` | `for (int i = lo; i < hi; i = i + 1) { .. }` |
//! | `let mut x = e;`, `x = e;`, `x += e;`, `a[i] = e;`, `if`, `return`, a tail value | the same |
//! | `vec![0; n]` | `new int[n]` |
//! | `#[local] let t = vec![0; n];` | `int[] t = new int[n];`, which must be one of the OpenCL code's `__local` arrays (`MethodKernels::local_arrays`), or the attribute is an error |
//! | `assert!(c)`, `ghost! { .. }` | `assert c;`, `ghost { .. }` |
//! | specs: `==>`, `**`, `forall(\|i: usize\| ..)`, `exists(..)`, `perm!(a[i], 1/2)`, `perm!(x, write)`, `old(e)`, `result`, `a.len()` | `==>`, `**`, `(\forall int i; 0 <= i && ..; ..)`, `\exists`, `Perm(a[i], 1\2)`, `Perm(x, write)`, `\old(e)`, `\result`, `a.length` |
//!
//! Architecture invariants:
//! - **Spans are token numbers** (`spans.rs`): every IR span maps back to the Rust tokens it
//!   came from, so every diagnostic underlines the user's own clause or operation.
//! - **Executable code is checked at its Rust types**: the checker's 32-bit mode runs on every
//!   kernel, and the arithmetic of unsigned values (`usize`, `u32`) also must not go below zero
//!   (`verify::Int32::unsigned`, E0641). Specifications and ghost code are mathematical.
//! - **Nothing is dropped**: a construct outside the subset is an error at its tokens.
//! - The expansion (`expand.rs`) is deterministic: a function of the tokens and of whether
//!   verification is on.

mod cpu;
mod expand;
mod expr;
mod fission;
mod include;
mod lower;
mod spans;

#[cfg(test)]
mod tests;

pub use expand::{
    expand_kernel, expand_module, misplaced_helper, verification_enabled, Checking, KernelVerdict,
};
pub use include::{expand_include_pvl, expand_include_pvl_in};
pub use lower::{lower_kernel, lower_routines, Lowered, RoutineKind, RustTy, HELPERS};
pub use spans::SpanMap;
