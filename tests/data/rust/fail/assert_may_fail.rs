// expect: E0601
// `assert!` runs: the checker proves its condition holds, and it does not for x = 0.
#[alpinist::kernel]
#[requires(0 <= x && x <= 10)]
pub fn positive(x: i32) -> i32 {
    assert!(x > 0);
    x
}

fn main() {}
