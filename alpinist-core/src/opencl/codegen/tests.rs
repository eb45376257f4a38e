use super::*;
use crate::syntax::parse;

fn generate_text(text: &str) -> Result<Kernel, CodegenError> {
    generate(&parse(text).expect("test input parses").program)
}

fn example(name: &str) -> Kernel {
    let path = format!(
        "{}/../examples/prefix-sum/{name}.pvl",
        env!("CARGO_MANIFEST_DIR")
    );
    generate_text(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A two-array Kogge-Stone-like kernel with one statement replaced.
fn with_update(update: &str) -> String {
    format!(
        "class C {{
  void scan(int N, int[] input, int[] output) {{
    int[] t = new int[N];
    par p(int tid = 0 .. N) {{
      t[tid] = input[tid];
      int v = 0;
      barrier(p) {{ }}
      {update}
      output[tid] = t[tid];
    }}
  }}
}}"
    )
}

/// The generated OpenCL of every prefix-sum example, so a change to code generation shows up
/// as a reviewed diff (`INSTA_UPDATE=always` to refresh).
#[test]
fn generated_sources_snapshot() {
    for name in [
        "kogge_stone",
        "kogge_stone_16",
        "sklansky",
        "brent_kung",
        "blelloch",
    ] {
        insta::assert_snapshot!(name, example(name).source);
    }
}

#[test]
fn the_four_scans_generate() {
    for name in ["kogge_stone", "sklansky", "brent_kung", "blelloch"] {
        let kernel = example(name);
        assert!(kernel.source.contains("__kernel void alp_scan("), "{name}");
        assert!(kernel.source.contains("OP("), "{name}");
        assert!(kernel.source.contains("barrier("), "{name}");
    }
}

#[test]
fn arrays_map_to_global_and_local() {
    let kernel = example("blelloch");
    assert!(kernel
        .source
        .contains("__global ELEM* alp_input, __global ELEM* alp_output"));
    assert!(kernel.source.contains("__local ELEM* temp"));
    assert!(matches!(&kernel.args[3], KernelArg::Local { name, .. } if name == "temp"));
    assert_eq!(kernel.work_items(16).unwrap(), 8);
}

#[test]
fn operand_order_and_identity_are_kept() {
    let kernel = example("blelloch");
    assert!(kernel.source.contains("OP(v, temp["), "{}", kernel.source);
    assert!(kernel.source.contains("= IDENTITY;"));
    assert!(kernel.source.contains("ELEM v = IDENTITY;"));
    // integer locals stay int
    assert!(kernel.source.contains("int offset = 1;"));
}

#[test]
fn specifications_and_ghost_code_are_erased() {
    let kernel = example("kogge_stone");
    for erased in ["seg", "splitSeg", "Perm", "xs", "isPow2"] {
        assert!(
            !kernel.source.contains(erased),
            "{erased}\n{}",
            kernel.source
        );
    }
}

#[test]
fn called_pure_functions_are_generated() {
    let kernel = example("brent_kung");
    assert!(kernel
        .source
        .contains("static bool upTarget(int c, int off)"));
    assert!(!kernel.source.contains("isPow2"));
}

#[test]
fn the_hash_is_of_the_source_and_deterministic() {
    let a = example("sklansky");
    let b = example("sklansky");
    assert_eq!(a.source_hash(), b.source_hash());
    assert_ne!(a.source_hash(), example("kogge_stone").source_hash());
    assert_eq!(a.source_hash(), fnv1a(a.source.as_bytes()));
}

#[test]
fn the_generic_template_generates() {
    let kernel = generate_text(&with_update(
        "if (tid >= 1) { v = t[tid - 1]; } t[tid] = v + t[tid];",
    ))
    .unwrap();
    assert!(kernel.source.contains("t[tid] = OP(v, t[tid]);"));
}

fn refused(update: &str) -> CodegenError {
    generate_text(&with_update(update)).expect_err(update)
}

#[test]
fn element_arithmetic_other_than_the_operator_is_refused() {
    for update in [
        "t[tid] = t[tid] * 2;",
        "t[tid] = t[tid] - v;",
        "t[tid] = t[tid] + 1;",
        "t[tid] = 1;",
        "v = t[tid] * 2;",
    ] {
        let error = refused(update);
        assert!(
            matches!(error, CodegenError::ElementMisuse { .. }),
            "{update}: {error:?}"
        );
    }
}

#[test]
fn comparing_elements_is_refused() {
    let error = refused("if (t[tid] > 0) { t[tid] = v; }");
    assert!(matches!(error, CodegenError::ElementMisuse { .. }));
    let error = refused("v = t[0]; if (v == t[tid]) { t[tid] = v; }");
    assert!(matches!(error, CodegenError::ElementMisuse { .. }));
}

#[test]
fn an_element_as_an_index_is_refused() {
    let error = refused("t[tid] = t[t[tid]];");
    assert!(matches!(error, CodegenError::ElementMisuse { .. }));
    let error = refused("v = t[0]; t[tid] = t[v];");
    assert!(matches!(error, CodegenError::ElementMisuse { .. }));
}

#[test]
fn refusals_carry_the_span_of_the_offending_expression() {
    let text = with_update("t[tid] = t[tid] * 2;");
    let error = generate_text(&text).unwrap_err();
    let span = error.span();
    assert_eq!(&text[span.start as usize..span.end as usize], "t[tid] * 2");
}

#[test]
fn structural_refusals() {
    let no_par = "class C { void m(int N, int[] a) { a[0] = 0; } }";
    assert!(matches!(
        generate_text(no_par),
        Err(CodegenError::NotAScanKernel { .. })
    ));
    let two_pars = "class C { void m(int N, int[] a) { par p(int t = 0 .. N) { a[t] = 0; } par q(int t = 0 .. N) { a[t] = 0; } } }";
    assert!(matches!(
        generate_text(two_pars),
        Err(CodegenError::Unsupported { .. })
    ));
    let bad_params =
        "class C { void m(int N, boolean b, int[] a) { par p(int t = 0 .. N) { a[t] = 0; } } }";
    assert!(matches!(
        generate_text(bad_params),
        Err(CodegenError::NotAScanKernel { .. })
    ));
}

#[test]
fn recursion_in_kernel_code_is_refused() {
    let text = "class C {
  pure boolean even(int n) = n == 0 || (n > 1 && even(n - 2));
  void m(int N, int[] a) { par p(int t = 0 .. N) { if (even(t)) { a[t] = 0; } } }
}";
    let error = generate_text(text).unwrap_err();
    assert!(
        matches!(&error, CodegenError::Unsupported { what, .. } if what.contains("recursive")),
        "{error:?}"
    );
}

#[test]
fn sizes_evaluate_on_the_host() {
    let kernel = example("blelloch");
    let KernelArg::Local { size, .. } = &kernel.args[3] else {
        panic!("temp is local")
    };
    assert_eq!(kernel.local_len(size, 64).unwrap(), 64);
    assert_eq!(kernel.work_items(64).unwrap(), 32);
}

/// The `+` emitted as `OP` are exactly the element combinations: the index and stride
/// arithmetic of the same kernel is not among them (`verify --int32` checks it).
#[test]
fn element_ops_are_the_op_additions_only() {
    let text = with_update("if (tid >= 1) { v = t[tid - 1]; t[tid] = v + t[tid]; }");
    let program = parse(&text).unwrap().program;
    let kernel = generate(&program).unwrap();
    let ops: Vec<&str> = kernel
        .element_ops
        .iter()
        .map(|s| &text[s.start as usize..s.end as usize])
        .collect();
    assert_eq!(ops, ["v + t[tid]"]);
    assert!(kernel.source.contains("OP(v, t[tid])"), "{}", kernel.source);
}

#[test]
fn sizes_are_checked_against_the_precondition() {
    let path = format!(
        "{}/../examples/prefix-sum/brent_kung.pvl",
        env!("CARGO_MANIFEST_DIR")
    );
    let program = parse(&std::fs::read_to_string(path).unwrap())
        .unwrap()
        .program;
    let kernel = generate(&program).unwrap();
    for n in [2, 4, 1024, 1 << 28] {
        assert_eq!(kernel.check_size(n), Ok(()), "n = {n}");
    }
    for (n, conjunct) in [(1, "N >= 2"), (6, "isPow2(N)"), (1 << 29, "N <= 268435456")] {
        let e = kernel.check_size(n).unwrap_err();
        assert_eq!(e.conjunct, conjunct, "n = {n}");
    }
}
