// A clause written above `#[alpinist::kernel]`: rustc expands it first, on its own, so it
// cannot be the kernel's; the error says where it goes, and the function is not verified.
use alpinist::prelude::*;

#[requires(x >= 0)]
#[alpinist::kernel]
#[ensures(result == x + 1)]
pub fn next(x: i32) -> i32 {
    x + 1
}

fn main() {}
