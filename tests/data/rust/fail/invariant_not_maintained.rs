// expect: E0606
// The loop adds one per iteration, the invariant claims two.
#[alpinist::kernel]
#[requires(0 <= n && n <= 1000)]
#[ensures(result == 2 * n)]
pub fn double(n: i32) -> i32 {
    let mut sum = 0;
    #[loop_invariant(0 <= i && i <= n)]
    #[loop_invariant(sum == 2 * i)]
    for i in 0..n {
        sum += 1;
    }
    sum
}

fn main() {}
