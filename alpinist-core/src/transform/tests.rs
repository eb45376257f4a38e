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
    visit_stmts(program, &mut |s| {
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
