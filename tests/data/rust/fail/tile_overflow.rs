// expect: E0623
// `#[gpuopt(tile(intra, 4))]` with no bound on `n`: the tiled kernel's thread count
// `(n + 3) / 4` overflows an `i32` where `n` nears 2^31, so the tiled kernel does not verify
// in the 32-bit mode (scale_tiled.rs bounds `n` and verifies).
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n && 4 < n)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
#[requires(forall(|i: usize| i < n ==> -1000 <= a[i] && a[i] <= 1000))]
#[ensures(forall(|i: usize| i < n ==> a[i] == 3 * old(a[i])))]
pub fn tile_overflow(n: usize, a: &mut [i32]) {
    #[gpuopt(tile(intra, 4))]
    #[thread(context(perm!(a[tid], write)))]
    #[thread(requires(-1000 <= a[tid] && a[tid] <= 1000))]
    #[thread(ensures(a[tid] == 3 * old(a[tid])))]
    for tid in par(0..n) {
        a[tid] *= 3;
    }
}

fn main() {}
