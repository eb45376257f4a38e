// expect: E0602
// The sum of 0 .. n - 1 is not n * n / 2 (the method's postcondition fails).
#[alpinist::kernel]
#[requires(0 <= n && n <= 1000)]
#[ensures(2 * result == n * n)]
pub fn sum_below(n: i32) -> i32 {
    let mut sum = 0;
    #[loop_invariant(0 <= i && i <= n)]
    #[loop_invariant(2 * sum == i * (i - 1))]
    for i in 0..n {
        sum += i;
    }
    sum
}

fn main() {}
