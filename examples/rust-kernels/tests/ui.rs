//! What users see from rustc: each file of `tests/data/rust/fail/` (a broken kernel: its
//! postcondition, a permission, a barrier, an invariant, an overflow, a refused `#[gpuopt]`,
//! PVL spelling in a spec, ..) and of `tests/data/rust/misplaced/` (helper attributes without
//! or above `#[alpinist::kernel]`) is compiled as a crate of its own, outside this workspace,
//! and must fail with the `.stderr` beside it; `tests/data/rust/pass/` must build and run.
//! `TRYBUILD=overwrite cargo test -p rust-kernels --test ui` writes the `.stderr` files anew
//! (review them). The same kernels are the lowering's unit tests
//! (`alpinist-core/src/rust/tests.rs`), which check their errors without rustc.

#[test]
fn diagnostics_as_rustc_prints_them() {
    let cases = trybuild::TestCases::new();
    cases.pass("../../tests/data/rust/pass/*.rs");
    cases.compile_fail("../../tests/data/rust/fail/*.rs");
    cases.compile_fail("../../tests/data/rust/misplaced/*.rs");
}
