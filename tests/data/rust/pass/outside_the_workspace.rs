// A crate of its own, outside alpinist's workspace, as a user writes one: kernels under
// `#[alpinist::kernel]` (and a module with a lemma), verified when it compiles, called as Rust.
use alpinist::prelude::*;

include!("../ok/vector_add.rs");
include!("../ok/sum_below.rs");
include!("../ok/two_halves.rs");

fn main() {
    let (a, b) = ([1, 2, 3], [10, 20, 30]);
    let mut c = [0; 3];
    vector_add(3, &a, &b, &mut c);
    assert_eq!(c, [11, 22, 33]);
    assert_eq!(sum_below(10), 45);
    assert_eq!(two_halves::total(4, &[1, 2, 3, 4]), 10);
    if std::env::var_os("ALPINIST_VERIFY").is_none() {
        assert_eq!(vector_add::VERIFIED, alpinist::KernelVerdict::Verified);
    }
}
