//! IR → PVL text in the house style.

use super::ir::{Expr, Program};
use super::Trivia;

pub fn print(program: &Program, trivia: &Trivia) -> String {
    let _ = (program, trivia);
    String::new()
}

pub fn print_expr(expr: &Expr) -> String {
    let _ = expr;
    String::new()
}
