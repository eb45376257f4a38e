//! Exit codes, the same for every subcommand (design.md, "Command line").

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    Success = 0,
    /// A definite negative: verification failed, optimisation refused, a scan test failed.
    Negative = 1,
    /// Bad input or usage: syntax, type or resolution error, unsupported construct.
    BadInput = 2,
    /// Inconclusive: some obligation unknown.
    Inconclusive = 3,
    /// Environment or internal error.
    Environment = 4,
}

impl Exit {
    /// The exit code of a child `alpinist` process.
    pub fn from_code(code: i32) -> Exit {
        match code {
            0 => Exit::Success,
            1 => Exit::Negative,
            2 => Exit::BadInput,
            3 => Exit::Inconclusive,
            _ => Exit::Environment,
        }
    }
}
