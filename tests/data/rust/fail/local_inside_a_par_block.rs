// expect: `#[local]` goes on a work-group array
// `#[local]` on an array a thread allocates: each thread's own array is no work-group's
// memory. Local arrays are allocated by the kernel before its par block.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n && n <= 1024)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
pub fn per_thread(n: usize, a: &mut [i32]) {
    #[thread(context(perm!(a[tid], write)))]
    for tid in par(0..n) {
        #[local]
        let t = vec![0; 4];
        a[tid] = t[0];
    }
}

fn main() {}
