// expect: shadowing is not supported
// Rust lets a `let` shadow a name; PVL has one variable per name, so the kernel is refused.
#[alpinist::kernel]
pub fn twice(x: i32) -> i32 {
    let y = 1;
    let y = y + 1;
    y
}

fn main() {}
