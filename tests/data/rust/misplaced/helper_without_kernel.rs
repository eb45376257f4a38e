// Contract attributes on a function that is not a kernel, and a pure function outside
// `#[alpinist::module]`: nothing would verify them, so each is an error that says what to add.
use alpinist::prelude::*;

#[ensures(result == 1)]
pub fn one() -> i32 {
    1
}

#[alpinist::pure]
fn double(x: i32) -> i32 {
    2 * x
}

fn main() {
    let _ = double(one());
}
