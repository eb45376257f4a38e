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
