//! Exit codes, the same for every subcommand (design.md, "Command line").

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    Success = 0,
    /// A definite negative: verification failed, optimisation refused, a scan test failed.
    #[allow(dead_code)]
    // produced by `scan-test` (feature `opencl`), and by `verify` once it lands
    Negative = 1,
    /// Bad input or usage: syntax, type or resolution error, unsupported construct.
    BadInput = 2,
    /// Inconclusive: some obligation unknown.
    #[allow(dead_code)]
    // produced by `scan-test` (feature `opencl`), and by `verify` once it lands
    Inconclusive = 3,
    /// Environment or internal error.
    Environment = 4,
}
