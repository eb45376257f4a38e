// expect: PVL keyword
// `write` is a good Rust name and a PVL permission: the kernel's PVL would mean another program.
#[alpinist::kernel]
pub fn one() -> i32 {
    let write = 1;
    write
}

fn main() {}
