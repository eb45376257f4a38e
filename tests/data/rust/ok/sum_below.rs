// A sequential kernel with a `for` loop over a range and a result: 0 + 1 + .. + (n - 1).
#[alpinist::kernel]
#[requires(0 <= n && n <= 1000)]
#[ensures(2 * result == n * (n - 1))]
pub fn sum_below(n: i32) -> i32 {
    let mut sum = 0;
    #[loop_invariant(0 <= i && i <= n)]
    #[loop_invariant(2 * sum == i * (i - 1))]
    for i in 0..n {
        sum += i;
    }
    sum
}
