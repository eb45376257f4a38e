// The generated 50,000-line program, shared by the benchmark and `examples/frontend_once.rs`.

/// One realistic annotated kernel class (par block with a barrier, a loop with invariants,
/// quantified permissions, comments), about 50 lines, with a unique class name.
fn kernel_class(index: usize) -> String {
    format!(
        r#"// Kernel {index}: neighbour sum with a barrier and a sequential loop.
class Kernel{index} {{
    context_everywhere a != null && b != null && a.length == N && b.length == N;
    context_everywhere N > 0;
    requires (\forall* int i; 0 <= i && i < N; Perm(a[i], write));
    requires (\forall* int i; 0 <= i && i < N; Perm(b[i], 1\2));
    ensures (\forall* int i; 0 <= i && i < N; Perm(a[i], write));
    ensures (\forall* int i; 0 <= i && i < N; Perm(b[i], 1\2));
    ensures (\forall int i; 0 < i && i < N; a[i] == b[i - 1] + b[i]);
    void kernel(int N, int[] a, int[] b) {{
        par step(int tid = 0 .. N)
            requires Perm(a[tid], write) ** Perm(b[tid], 1\2);
            ensures Perm(a[tid], write) ** Perm(b[tid], 1\2);
            ensures tid > 0 ==> a[tid] == b[tid - 1] + b[tid];
        {{
            a[tid] = b[tid]; /* copy first */
            barrier(step) {{
                requires Perm(a[tid], write) ** Perm(b[tid], 1\2);
                ensures Perm(a[tid], write) ** Perm(b[tid], 1\4);
                ensures tid > 0 ==> Perm(b[tid - 1], 1\4);
            }}
            if (tid > 0) {{
                a[tid] = b[tid - 1] + b[tid];
            }}
            barrier(step) {{
                requires Perm(a[tid], write) ** Perm(b[tid], 1\4);
                requires tid > 0 ==> Perm(b[tid - 1], 1\4);
                requires tid > 0 ==> a[tid] == b[tid - 1] + b[tid];
                ensures Perm(a[tid], write) ** Perm(b[tid], 1\2);
                ensures tid > 0 ==> a[tid] == b[tid - 1] + b[tid];
            }}
        }}
    }}

    requires n >= 0;
    ensures \result == n * (n + 1) / 2;
    int triangle(int n) {{
        int s = 0;
        int i = 0;
        gpuopt loop_unroll i 2;
        loop_invariant 0 <= i && i <= n;
        loop_invariant s == i * (i + 1) / 2;
        while (i < n) {{
            i = i + 1;
            s = s + i; // running sum
        }}
        return s;
    }}

    pure int sum(seq<int> xs) = |xs| == 0 ? 0 : head(xs) + sum(tail(xs));
}}

"#
    )
}

fn generated_program(min_lines: usize) -> String {
    let mut text = String::new();
    let mut lines = 0;
    let mut index = 0;
    // Each class ends with a newline, so the line counts add up.
    while lines < min_lines {
        let class = kernel_class(index);
        lines += class.lines().count();
        text.push_str(&class);
        index += 1;
    }
    text
}
