// expect: E0612
// The thread holds half of its cell and writes it: a data race the permissions rule out.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(c.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(c[i], write)))]
pub fn zero(n: usize, c: &mut [i32]) {
    #[thread(context(perm!(c[tid], 1/2)))]
    for tid in par(0..n) {
        c[tid] = 0;
    }
}

fn main() {}
