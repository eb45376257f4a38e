// expect: ghost code cannot write arrays
// Ghost code is verified but never run: a write in it would be proved and not done.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
#[ensures(forall(|i: usize| i < n ==> a[i] == 1))]
pub fn fill(n: usize, a: &mut [i32]) {
    #[thread(context(perm!(a[tid], write)))]
    #[thread(ensures(a[tid] == 1))]
    for tid in par(0..n) {
        ghost! {
            a[tid] = 1;
        }
    }
}

fn main() {}
