use super::*;
use crate::syntax::parse;

#[test]
fn fresh_names_avoid_every_name_in_the_program() {
    let program = parse("class C { void m(int x) { int x_1 = x; int y = x_1; } }")
        .unwrap()
        .program;
    let mut names = FreshNames::new(&program);
    assert!(names.is_taken("x") && names.is_taken("x_1") && names.is_taken("m"));
    assert_eq!(names.fresh("x"), "x_2");
    assert_eq!(names.fresh("x"), "x_3");
    assert_eq!(names.fresh("g"), "g");
    assert_eq!(names.fresh("g"), "g_1");
}

/// The span of the first loop in `src`.
fn first_loop(program: &Program) -> Span {
    let mut span = None;
    program.visit_stmts(&mut |s| {
        if matches!(s.kind, StmtKind::While { .. } | StmtKind::For { .. }) && span.is_none() {
            span = Some(s.span);
        }
    });
    span.expect("a loop")
}

fn plan_of(src: &str, var: &str, k: u32) -> Result<unroll::Plan, Refusal> {
    let program = parse(src).unwrap().program;
    unroll::plan(&program, first_loop(&program), var, k)
}

#[test]
fn syntactic_prerequisites_are_refused_with_their_code() {
    let heap = "class C { void m(int[] a) { int i = 0; while (i < a[0]) { i = i + 1; } } }";
    assert!(matches!(
        plan_of(heap, "i", 2),
        Err(Refusal::GuardReadsHeap { .. })
    ));
    let other = "class C { void m(int n) { int i = 0; int j = 0; while (j < n) { i = i + 1; j = j + 1; } } }";
    assert!(matches!(
        plan_of(other, "i", 2),
        Err(Refusal::GuardShape { .. })
    ));
    let zero = "class C { void m(int n) { int i = 0; while (i < n) { i = i + 0; } } }";
    assert!(matches!(
        plan_of(zero, "i", 2),
        Err(Refusal::UpdateShape { .. })
    ));
    let twice = "class C { void m(int n) { int i = 0; while (i < n) { i = i + 1; i = i + 1; } } }";
    assert!(matches!(
        plan_of(twice, "i", 2),
        Err(Refusal::UpdateShape { .. })
    ));
    let modulo = "class C { void m(int n) { int i = 0; while (i < n) { i = i % 2; } } }";
    assert!(matches!(
        plan_of(modulo, "i", 2),
        Err(Refusal::UpdateShape { .. })
    ));
    let for_loop = "class C { void m(int n) { for (int i = 0; i < n; i++) { } } }";
    assert!(matches!(
        plan_of(for_loop, "i", 2),
        Err(Refusal::Unsupported { .. })
    ));
    // Writes the shared walker (`Stmt::assigned_locals`) sees: inside `atomic`, and the
    // caller's target of `then { i = r; }` (not the callee's `r`).
    let atomic = "class C { int f; void m(int n) { int i = 0; invariant inv(Perm(f, write)) { while (i < n) { atomic(inv) { i = i + 5; } i = i + 1; } } } }";
    assert!(matches!(
        plan_of(atomic, "i", 2),
        Err(Refusal::UpdateShape { .. })
    ));
    let ghost = "class C { yields int r; void g() { r = 0; } void m(int n) { int i = 0; int j = 0; while (i < n) { g() then { n = r; }; i = i + 1; } } }";
    assert!(matches!(
        plan_of(ghost, "i", 2),
        Err(Refusal::BodyWritesGuardVariable { .. })
    ));
    let fine = "class C { void m(int n) { int i = 0; while (i < n) { i++; } } }";
    assert!(matches!(
        plan_of(fine, "i", 0),
        Err(Refusal::BadFactor { .. })
    ));
    let plan = plan_of(fine, "i", 3).unwrap();
    assert_eq!(plan.op, crate::syntax::BinaryOp::Add);
    assert_eq!(plan.step, num_bigint::BigUint::from(1u8));
}

#[test]
fn the_rewrite_peels_k_copies_and_shifts_the_bound() {
    let src = "class C {\n  requires n > 3;\n  void m(int n) {\n    int i = 1;\n    loop_invariant 1 <= i && i <= 2 * n;\n    while (i < n) {\n      i = i * 3;\n    }\n  }\n}\n";
    let parsed = parse(src).unwrap();
    let plan = unroll::plan(&parsed.program, first_loop(&parsed.program), "i", 2).unwrap();
    let out = unroll::apply(&parsed.program, &plan).unwrap();
    let text = crate::syntax::print(&out, &parsed.trivia);
    assert_eq!(text.matches("i = i * 3;").count(), 3, "{text}");
    assert_eq!(
        text.matches("assert 1 <= i && i <= 2 * n;").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("loop_invariant 9 <= i && i <= 2 * n;"),
        "{text}"
    );
}

/// The merge plan of the first loop of `src` with the given constants at loop entry.
fn merge_plan(
    src: &str,
    var: &str,
    m: u32,
    constants: &[(&str, i128)],
) -> Result<merge::MergePlan, Refusal> {
    let shape = plan_of(src, var, 1)?;
    let constants: Vec<(String, i128)> =
        constants.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    merge::plan_count(shape, m, &constants)
}

#[test]
fn the_iteration_count_is_found_for_each_update_form() {
    let up = "class C { void m(int n) { int i = 0; while (i < n) { i = i + 3; } } }";
    let plan = merge_plan(up, "i", 2, &[("i", 0), ("n", 10)]).unwrap();
    assert_eq!((plan.count, plan.values.clone()), (4, vec![0, 3, 6, 9, 12]));
    let down = "class C { void m(int n) { int i = 0; while (i >= n) { i--; } } }";
    assert_eq!(
        merge_plan(down, "i", 2, &[("i", 5), ("n", -2)])
            .unwrap()
            .count,
        8
    );
    let times = "class C { void m(int[] a) { int i = 1; while (i <= a.length) { i = 2 * i; } } }";
    assert_eq!(
        merge_plan(times, "i", 2, &[("i", 1), ("a.length", 16)])
            .unwrap()
            .count,
        5
    );
    let halve = "class C { void m() { int i = 0; while (i > 0) { i = i / 10; } } }";
    assert_eq!(merge_plan(halve, "i", 3, &[("i", 12345)]).unwrap().count, 5);
    assert!(matches!(
        merge_plan(halve, "i", 3, &[("i", -5)]),
        Err(Refusal::MergeFactorExceedsCount { count: 0, .. })
    ));
    assert!(matches!(
        merge_plan(up, "i", 5, &[("i", 0), ("n", 10)]),
        Err(Refusal::MergeFactorExceedsCount {
            count: 4,
            factor: 5,
            ..
        })
    ));
    let stuck = "class C { void m() { int i = 0; while (i < 10) { i = i * 2; } } }";
    assert!(matches!(
        merge_plan(stuck, "i", 2, &[("i", 0)]),
        Err(Refusal::MergeCountUnbounded { .. })
    ));
    let negative = "class C { void m() { int i = 0; while (i < 0) { i = i / 2; } } }";
    assert!(matches!(
        merge_plan(negative, "i", 2, &[("i", -8)]),
        Err(Refusal::MergeUnsupported { .. })
    ));
}

#[test]
fn the_guard_atoms_are_its_names_and_lengths() {
    let program = parse("class C { void m(int[] a, int n) { int i = 0; while (i < a.length - n && i != n) { i++; } } }")
        .unwrap()
        .program;
    let StmtKind::While { cond, .. } = &unroll::find_stmt(&program, first_loop(&program))
        .unwrap()
        .kind
    else {
        panic!("a loop")
    };
    let atoms: Vec<String> = merge::guard_atoms(cond, "i")
        .iter()
        .map(crate::syntax::print_expr)
        .collect();
    assert_eq!(atoms, ["a.length", "n"]);
}

#[test]
fn the_merged_loop_has_the_ghost_counter_and_m_copies() {
    let src = "class C {\n  void m() {\n    int s = 0;\n    int i = 7;\n    loop_invariant i <= 7;\n    while (i > 0) {\n      s = s + i;\n      i = i - 2;\n    }\n  }\n}\n";
    let parsed = parse(src).unwrap();
    let plan = merge_plan(src, "i", 3, &[("i", 7)]).unwrap();
    assert_eq!(plan.count, 4);
    let out = merge::apply(&parsed.program, &plan).unwrap();
    let text = crate::syntax::print(&out, &parsed.trivia);
    // 4 = 3 + 1: one peeled copy, three merged ones.
    assert_eq!(text.matches("s = s + i;").count(), 4, "{text}");
    for line in [
        "ghost int g = 1;",
        "loop_invariant i <= 5;",
        "loop_invariant 0 <= g && g <= 4;",
        "loop_invariant g % 3 == 1;",
        "loop_invariant i == 7 - 2 * g;",
        "ghost g = g + 3;",
    ] {
        assert!(text.contains(line), "{line} missing in\n{text}");
    }
    // A name `g` in the program: the counter gets another.
    let taken = src.replace("int s = 0;", "int s = 0;\n    int g = 0;");
    let parsed = parse(&taken).unwrap();
    let plan = merge_plan(&taken, "i", 3, &[("i", 7)]).unwrap();
    let out = merge::apply(&parsed.program, &plan).unwrap();
    let text = crate::syntax::print(&out, &parsed.trivia);
    assert!(text.contains("ghost int g_1 = 1;"), "{text}");
}

#[test]
fn merging_proves_constants_stated_by_the_contract_and_refuses_others() {
    let src = "class C {\n  requires n == 6;\n  void m(int n) {\n    int i = 0;\n    loop_invariant 0 <= i && i <= n;\n    while (i < n) {\n      i = i + 1;\n    }\n  }\n}\n";
    let merge = |program: &Program, m: u32| {
        merge::merge(
            program,
            first_loop(program),
            "i",
            m,
            &crate::verify::Limits::default(),
        )
    };
    let program = parse(src).unwrap().program;
    let (out, _) = merge(&program, 4).unwrap();
    let text = crate::syntax::print(&out, &Default::default());
    assert!(text.contains("loop_invariant g % 4 == 2;"), "{text}");
    // Another method's contract says nothing about this loop.
    let other = src.replace(
        "class C {\n",
        "class C {\n  requires n == 3;\n  void k(int n) {\n    int i = 1;\n  }\n",
    );
    let program_other = parse(&other).unwrap().program;
    let (out, _) = merge(&program_other, 4).unwrap();
    let text = crate::syntax::print(&out, &Default::default());
    assert!(text.contains("loop_invariant 0 <= g && g <= 6;"), "{text}");
    let symbolic = parse(&src.replace("n == 6", "n >= 6")).unwrap().program;
    assert!(matches!(
        merge(&symbolic, 4),
        Err(Refusal::MergeCountNotStatic { .. })
    ));
    assert!(matches!(
        merge(&program, 1),
        Err(Refusal::MergeBadFactor { factor: 1, .. })
    ));
}
