//! Uniformity tests: small PVL programs, parsed and type-checked, then analysed.

use super::*;
use crate::syntax;

/// The errors of the whole program `src`, which must parse and type-check.
fn errors(src: &str) -> Vec<UniformityError> {
    let parsed = syntax::parse(src).unwrap_or_else(|e| panic!("syntax: {e:?}"));
    crate::check::check(&parsed.program).unwrap_or_else(|e| panic!("check: {e:?}"));
    let program_errors = check_program_uniformity(&parsed.program);
    // Without knowledge of callees the method-level entry point can only add errors.
    let mut single = Vec::new();
    for member in all_members(&parsed.program) {
        if let MemberKind::Method(m) = &member.kind {
            single.extend(check_barrier_uniformity(m));
        }
    }
    for e in &program_errors {
        assert!(single.contains(e), "{e:?} missing from {single:?}");
    }
    program_errors
}

/// A kernel `k(int n, int[] a)` with a par block `blk(int tid = 0 .. n)` around `body`.
fn kernel(body: &str) -> String {
    format!(
        "class C {{\n  context_everywhere a != null && a.length == n && n > 0;\n  \
         void k(int n, int[] a) {{\n    int outer = n - 1;\n    \
         par blk(int tid = 0 .. n) {{\n{body}\n    }}\n  }}\n}}\n"
    )
}

fn text(src: &str, span: Span) -> &str {
    src[span.range()].trim_end()
}

/// The single error of `body` in [`kernel`]: its code and the text of its origin.
fn single_error(body: &str) -> (String, &'static str, String) {
    let src = kernel(body);
    let errs = errors(&src);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let e = &errs[0];
    assert!(text(&src, e.span()).starts_with("barrier(blk)"), "{e:?}");
    (
        e.to_string(),
        e.code_str(),
        text(&src, e.origin()).to_string(),
    )
}

/// The text of the guard of each error, which must all be E0510.
fn guard_texts<'s>(src: &'s str, errs: &[UniformityError]) -> Vec<&'s str> {
    errs.iter()
        .map(|e| match e {
            UniformityError::ThreadDependentGuard { guard, .. } => text(src, *guard),
            other => panic!("{other:?}"),
        })
        .collect()
}

const BARRIER: &str = "barrier(blk) { context 0 <= tid && tid < n; }";

#[test]
fn uniform_guards_and_contract_locals_pass() {
    let body = format!(
        "int s = 1;\n\
         int m = outer + a.length * 2;\n\
         while (s < n) {{\n\
           int v = 0;\n\
           if (tid >= s) {{ v = a[tid - s]; }}\n\
           if (m > 0 && n % 2 == 0) {{\n\
             barrier(blk) {{ context 0 <= tid && tid < n && s < n && m == m; }}\n\
           }}\n\
           s = s * 2;\n\
         }}\n\
         for (int j = 0; j < outer; j++) {{ {BARRIER} }}"
    );
    assert_eq!(errors(&kernel(&body)), vec![]);
}

#[test]
fn barrier_under_thread_id_condition() {
    let (msg, code, origin) = single_error(&format!("if (tid < 4) {{ {BARRIER} }}"));
    assert_eq!(code, "E0510");
    assert_eq!(msg, "barrier under a thread-dependent condition");
    assert_eq!(origin, "tid");
}

#[test]
fn barrier_under_condition_on_a_local_derived_from_the_thread_id() {
    let (_, code, origin) = single_error(&format!(
        "int x = tid * 2;\nint y = 3;\ny = y + 1;\nif (x > 0) {{ {BARRIER} }}"
    ));
    assert_eq!(code, "E0510");
    assert_eq!(origin, "x = tid * 2");
}

#[test]
fn overwriting_with_a_uniform_value_removes_the_taint() {
    let body = format!("int x = tid * 2;\nx = 5;\nif (x > 0) {{ {BARRIER} }}");
    assert_eq!(errors(&kernel(&body)), vec![]);
}

#[test]
fn barrier_in_a_loop_bounded_by_a_heap_read() {
    let (_, code, origin) = single_error(&format!(
        "int i = 0;\nwhile (i < a[0]) {{ {BARRIER}\n i = i + 1; }}"
    ));
    assert_eq!(code, "E0510");
    assert_eq!(origin, "a[0]");
}

#[test]
fn heap_read_in_an_outer_local_taints() {
    let src = format!(
        "class C {{\n  context_everywhere a != null && a.length == n && n > 0;\n  \
         void k(int n, int[] a) {{\n    int h = a[0];\n    \
         par blk(int tid = 0 .. n) {{\n if (h > 0) {{ {BARRIER} }}\n    }}\n  }}\n}}\n"
    );
    let errs = errors(&src);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(text(&src, errs[0].origin()), "h = a[0]");
}

#[test]
fn allocation_before_the_par_is_uniform_inside_it_is_not() {
    let src = |decl_outside: &str, decl_inside: &str| {
        format!(
            "class C {{\n  context_everywhere n > 0;\n  void k(int n) {{\n    {decl_outside}\n    \
             par blk(int tid = 0 .. n) {{\n {decl_inside}\n \
             barrier(blk) {{ context 0 <= tid && r != null; }}\n    }}\n  }}\n}}\n"
        )
    };
    assert_eq!(errors(&src("int[] r = new int[n];", "")), vec![]);
    let bad = src("", "int[] r = new int[n];");
    let errs = errors(&bad);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].code_str(), "E0511");
    assert_eq!(text(&bad, errs[0].origin()), "r = new int[n]");
}

#[test]
fn barrier_after_a_thread_dependent_return() {
    let body = format!(
        "int i = 0;\nwhile (i < n) {{ {BARRIER}\n if (tid == 1) {{ return; }}\n i = i + 1; }}"
    );
    let src = kernel(&body);
    // `check` may refuse a return in a par block; analyse anyway.
    let parsed = syntax::parse(&src).unwrap_or_else(|e| panic!("{e:?}"));
    let errs = check_program_uniformity(&parsed.program);
    // The return guard, and the loop condition: `i` is now only updated by some threads.
    let guards = guard_texts(&src, &errs);
    assert_eq!(guards, ["i < n", "tid == 1"], "{errs:?}");
}

#[test]
fn contract_local_set_under_thread_condition_implicit_flow() {
    let (msg, code, origin) = single_error(
        "int k = 0;\nif (tid == 0) { k = 1; }\n\
         barrier(blk) { context 0 <= tid && tid < n && k >= 0; }",
    );
    assert_eq!(code, "E0511");
    assert_eq!(msg, "barrier contract uses a thread-dependent local `k`");
    assert_eq!(origin, "tid == 0");
}

#[test]
fn contract_local_assigned_from_thread_id() {
    let src = kernel("int k = tid + 1;\nbarrier(blk) { requires k > 0; ensures k > 0; }");
    let errs = errors(&src);
    // One error per barrier and name, however often the name occurs.
    assert_eq!(errs.len(), 1, "{errs:?}");
    let UniformityError::ThreadDependentLocal { name, usage, .. } = &errs[0] else {
        panic!("{errs:?}")
    };
    assert_eq!(name, "k");
    assert_eq!(text(&src, *usage), "k");
    assert_eq!(text(&src, errs[0].origin()), "k = tid + 1");
}

#[test]
fn taint_through_a_loop_back_edge() {
    // On the first pass `b` is uniform at the barrier; only after the back edge (c = tid,
    // then b = c) does the loop head know that it is not.
    let (_, code, origin) = single_error(
        "int b = 0;\nint c = 0;\nint i = 0;\n\
         while (i < n) {\n\
           barrier(blk) { context 0 <= tid && tid < n && b >= 0; }\n\
           b = c;\n\
           c = tid;\n\
           i = i + 1;\n\
         }",
    );
    assert_eq!(code, "E0511");
    assert_eq!(origin, "b = c;");
}

#[test]
fn loop_condition_tainted_through_the_back_edge() {
    let (_, code, _) = single_error(&format!(
        "int i = 0;\nwhile (i < n) {{ {BARRIER}\n i = i + tid; }}"
    ));
    assert_eq!(code, "E0510");
}

#[test]
fn loop_counter_updated_under_thread_condition() {
    let (_, code, origin) = single_error(&format!(
        "int i = 0;\nwhile (i < n) {{ {BARRIER}\n if (tid == 0) {{ i = i + 2; }} else {{ i = i + 1; }} }}"
    ));
    assert_eq!(code, "E0510");
    assert_eq!(origin, "tid == 0");
}

#[test]
fn thread_dependent_guard_of_an_enclosing_loop_and_if_both_reported() {
    let src = kernel(&format!(
        "for (int j = 0; j < tid; j++) {{ if (a[j] > 0) {{ {BARRIER} }} }}"
    ));
    let errs = errors(&src);
    let guards = guard_texts(&src, &errs);
    assert_eq!(guards.len(), 2, "{errs:?}");
    assert!(
        guards.contains(&"j < tid") && guards.contains(&"a[j] > 0"),
        "{guards:?}"
    );
}

#[test]
fn length_of_a_uniform_array_is_uniform_but_cells_and_fields_are_not() {
    assert_eq!(
        errors(&kernel(&format!("if (a.length > 1) {{ {BARRIER} }}"))),
        vec![]
    );
    let src = "class C {\n  int f;\n  context_everywhere n > 0;\n  context Perm(f, 1\\2);\n  \
               void k(int n) {\n    par blk(int tid = 0 .. n) context Perm(f, 1\\(n+1)); {\n      \
               if (this.f > 0) { barrier(blk) { context 0 <= tid; } }\n    }\n  }\n}\n";
    let errs = errors(src);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(text(src, errs[0].origin()), "this.f");
}

#[test]
fn thread_ids_of_enclosing_blocks_and_bound_variables_are_allowed_in_contracts() {
    let src = "class C {\n  context_everywhere n > 0;\n  void k(int n, int[] a) {\n    \
               par outerb(int g = 0 .. n) {\n      par blk(int tid = 0 .. n) {\n        \
               barrier(blk) { context 0 <= tid && 0 <= g && (\\forall int q; 0 <= q && q < n; q >= 0); }\n      \
               }\n    }\n  }\n}\n";
    assert_eq!(errors(src), vec![]);
}

#[test]
fn inner_thread_id_in_an_outer_barrier_is_reported() {
    let src = "class C {\n  context_everywhere n > 0;\n  void k(int n) {\n    \
               par outerb(int g = 0 .. n) {\n      par blk(int tid = 0 .. n) {\n        \
               barrier(outerb) { context 0 <= tid; }\n      }\n    }\n  }\n}\n";
    // `check` may refuse a barrier of an outer block inside an inner one; analyse anyway.
    let parsed = syntax::parse(src).unwrap_or_else(|e| panic!("{e:?}"));
    let errs = check_program_uniformity(&parsed.program);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].code_str(), "E0511");
}

#[test]
fn calls_taint_unless_heap_free_pure_with_uniform_arguments() {
    let src = |cond: &str| {
        format!(
            "class C {{\n  pure int twice(int x) = 2 * x;\n  \
             requires a != null && a.length > 0 ** Perm(a[0], 1\\2);\n  \
             pure int first(int[] a) = a[0];\n  \
             context_everywhere a != null && a.length == n && n > 0;\n  \
             context (\\forall* int i; 0 <= i && i < n; Perm(a[i], 1\\2));\n  \
             void k(int n, int[] a) {{\n    \
             par blk(int tid = 0 .. n) context Perm(a[tid], 1\\(n+1)); {{\n      \
             if ({cond}) {{ {BARRIER} }}\n    }}\n  }}\n}}\n"
        )
    };
    // Pure and heap-free: uniform when its argument is, for the whole-program analysis.
    let ok = src("twice(n) > 0");
    let parsed = syntax::parse(&ok).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(check_program_uniformity(&parsed.program), vec![]);
    // The single-method entry point knows no callee: conservative.
    let method = all_members(&parsed.program)
        .into_iter()
        .find_map(|m| match &m.kind {
            MemberKind::Method(m) if m.name.name == "k" => Some(m),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no k"));
    assert_eq!(check_barrier_uniformity(method).len(), 1);
    for cond in ["twice(tid) > 0", "first(a) > 0"] {
        let bad = src(cond);
        let parsed = syntax::parse(&bad).unwrap_or_else(|e| panic!("{e:?}"));
        let errs = check_program_uniformity(&parsed.program);
        assert_eq!(errs.len(), 1, "{cond}: {errs:?}");
        assert_eq!(errs[0].code_str(), "E0510");
    }
}

#[test]
fn error_renders_with_code_and_both_spans() {
    let src = kernel(&format!("int x = tid;\nif (x > 0) {{ {BARRIER} }}"));
    let errs = errors(&src);
    assert_eq!(errs.len(), 1);
    let diag: &dyn miette::Diagnostic = &errs[0];
    assert_eq!(diag.code().map(|c| c.to_string()).as_deref(), Some("E0510"));
    let labels: Vec<_> = diag.labels().into_iter().flatten().collect();
    assert_eq!(labels.len(), 3);
}

/// Every example is meant to be correct: no barrier of theirs may be reported.
#[test]
fn examples_have_uniform_barriers() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "pvl") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 20, "{files:?}");
    let mut barriers = 0;
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        barriers += src.matches("barrier(").count();
        let parsed = syntax::parse(&src).unwrap_or_else(|e| panic!("{path:?}: {e:?}"));
        let errs = check_program_uniformity(&parsed.program);
        assert!(errs.is_empty(), "{path:?}: {errs:#?}");
    }
    assert!(barriers >= 10, "{barriers}");
}

#[test]
fn ghost_results_taint_the_callers_target() {
    // `then { y = r; }` writes the caller's `y` (not the callee's `r`): the callee is not
    // analysed, so `y` is thread-dependent, in a call statement and in an initialiser alike.
    for call in [
        "ghost int y = 0;\n id(tid) then { y = r; };",
        "ghost int y = 0;\n int q = id(tid) then { y = r; };",
        "ghost int y = 0;\n int q = 0;\n q = id(tid) then { y = r; };",
    ] {
        let src = format!(
            "class C {{\n  yields int r;\n  ensures r == x && \\result == x;\n  \
             int id(int x) {{ r = x; return x; }}\n  \
             context_everywhere a != null && a.length == n && n > 0;\n  \
             void k(int n, int[] a) {{\n    par blk(int tid = 0 .. n) {{\n      {call}\n      \
             if (y > 0) {{ {BARRIER} }}\n    }}\n  }}\n}}\n"
        );
        let errs = errors(&src);
        assert_eq!(errs.len(), 1, "{call}: {errs:#?}");
        assert_eq!(errs[0].code_str(), "E0510", "{call}");
    }
}

/// A kernel with a group thread `g` around a par block `inner(int t = 0 .. m)` whose body
/// is `body`; `before` runs in the group thread before the inner block starts.
fn nested_kernel(before: &str, body: &str) -> String {
    format!(
        "class C {{\n  context_everywhere a != null && a.length == n * m && n > 0 && m > 0;\n  \
         void k(int n, int m, int[] a) {{\n    par outer(int g = 0 .. n) {{\n{before}\n      \
         par inner(int t = 0 .. m) {{\n{body}\n      }}\n    }}\n  }}\n}}\n"
    )
}

#[test]
fn contract_local_of_the_enclosing_thread_is_uniform_for_the_inner_block() {
    // `base` and `scratch` depend on the group thread `g` (a product with it, an allocation
    // per group), but every thread of `inner` sees the one value its group set.
    let src = nested_kernel(
        "int base = g * m;\nint[] scratch = new int[m];",
        "barrier(inner) { context base >= 0 && scratch != null; }",
    );
    assert_eq!(errors(&src), []);
}

#[test]
fn contract_local_of_the_enclosing_thread_assigned_in_the_inner_block() {
    // Broken twin: `base` is declared by the group thread but written by each inner thread
    // with its own id, so the inner block's threads disagree on it at the barrier.
    let src = nested_kernel(
        "int base = g * m;",
        "base = t;\nbarrier(inner) { context base >= 0; }",
    );
    let parsed = syntax::parse(&src).unwrap_or_else(|e| panic!("syntax: {e:?}"));
    let errs = check_program_uniformity(&parsed.program);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].code_str(), "E0511");
    assert_eq!(text(&src, errs[0].origin()), "base = t;");
}
