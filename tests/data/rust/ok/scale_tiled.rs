// Each thread triples its cell; `#[gpuopt(tile(intra, 4))]` on the par block makes each of
// (n + 3) / 4 threads handle four consecutive cells (`n > 4` makes 4 < n provable); the tiled
// kernel is reverified in the 32-bit mode (the bound on `n` keeps its tile arithmetic within
// `i32`) and `PVL` holds it.
#[alpinist::kernel]
#[context_everywhere(a.len() == n && 4 < n && n <= 1000000)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
#[requires(forall(|i: usize| i < n ==> -1000 <= a[i] && a[i] <= 1000))]
#[ensures(forall(|i: usize| i < n ==> a[i] == 3 * old(a[i])))]
pub fn scale_tiled(n: usize, a: &mut [i32]) {
    #[gpuopt(tile(intra, 4))]
    #[thread(context(perm!(a[tid], write)))]
    #[thread(requires(-1000 <= a[tid] && a[tid] <= 1000))]
    #[thread(ensures(a[tid] == 3 * old(a[tid])))]
    for tid in par(0..n) {
        a[tid] *= 3;
    }
}
