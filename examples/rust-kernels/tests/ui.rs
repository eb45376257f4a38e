//! What users see from rustc: each file of `tests/data/rust/fail/` (a broken kernel: its
//! postcondition, a permission, a barrier, an invariant, an overflow, a refused `#[gpuopt]`,
//! PVL spelling in a spec, ..) and of `tests/data/rust/misplaced/` (helper attributes without
//! or above `#[alpinist::kernel]`) is compiled as a crate of its own, outside this workspace,
//! and must fail with the `.stderr` beside it; `tests/data/rust/pass/` must build and run.
//! A crate of its own depending on `alpinist` alone builds and runs the pass case too.
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

/// A crate outside the workspace that depends on the `alpinist` package alone, by path, as a
/// user's crate does (trybuild's projects also depend on the crate whose tests they are): it
/// builds, its kernels verified while rustc expands them, and runs. Built beside trybuild's
/// projects, whose compiled dependencies it shares.
#[test]
fn a_crate_that_depends_on_alpinist_alone_builds_and_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root");
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("tests/trybuild");
    let project = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("outside-alpinist");
    std::fs::create_dir_all(&project).expect("the project's folder");
    let features = if cfg!(feature = "opencl") {
        r#", features = ["opencl"]"#
    } else {
        ""
    };
    let manifest = format!(
        "[package]\nname = \"outside-alpinist\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\nalpinist = {{ path = {root:?}, default-features = false{features} }}\n\n\
         [[bin]]\nname = \"outside-alpinist\"\npath = {main:?}\n\n[workspace]\n",
        root = root.display().to_string(),
        main = root
            .join("tests/data/rust/pass/outside_the_workspace.rs")
            .display()
            .to_string(),
    );
    std::fs::write(project.join("Cargo.toml"), manifest).expect("the manifest");
    // The workspace's versions of every dependency, already fetched.
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).expect("the lock file");
    // Built as trybuild builds (its target folder, flags and settings), so that the compiled
    // dependencies are shared; other flags would cost a build of them, not a wrong result.
    let output = std::process::Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--offline", "--manifest-path"])
        .arg(project.join("Cargo.toml"))
        .arg(r#"--config=build.rustflags=["--cfg","trybuild","--verbose","-A","dead_code"]"#)
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "the crate outside the workspace did not build or run:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
