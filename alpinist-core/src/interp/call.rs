//! A method of a PVL text called with plain Rust values: what the functions generated for Rust
//! code call (`alpinist::include_pvl!`'s CPU functions, and the OpenCL launchers through
//! `opencl::kernel_run`, which share [`Arg`] and [`Ran`]).
//!
//! The CPU run is the interpreter's ([`super::run`]): threads between barriers one after
//! another, every integer operation checked. Its input is first checked against the method's
//! entry precondition ([`admitted`]): an input outside it is an error
//! ([`CallError::Uncovered`]), never a run the proof does not cover. The caller owns every cell
//! it passes, so permissions the interpreter cannot follow exactly (`\matrix`, fields) do not
//! refuse the input ([`super::Limits::admit_untracked_permissions`]).

use super::{InterpError, Limits, Memory, Value};

/// An argument, in the method's parameter order (ghost parameters left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    Int(i128),
    Bool(bool),
    /// A slice of integers (`&[i32]`, `&[usize]`, ..), its cells copied in.
    Ints(Vec<i128>),
    Bools(Vec<bool>),
}

/// Why a call did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The PVL does not parse (a bug: it was verified).
    #[error("the kernel's PVL does not parse")]
    Parse,
    /// The run left what the proof covers: the precondition (or an `assume`) does not hold.
    #[error("the input is outside what the proof covers: {0}")]
    Uncovered(String),
    /// The run itself (a limit, or a construct the interpreter does not run).
    #[error("the run failed: {0}")]
    Run(String),
    /// The method returned nothing of the type asked for.
    #[error("the kernel returned no {0}")]
    NoResult(&'static str),
}

/// What a call computed: the final contents of the slices, and the result.
#[derive(Clone, Debug)]
pub struct Ran {
    arrays: Vec<Option<Vec<Value>>>,
    result: Option<Value>,
}

impl Ran {
    /// The final cells of the array arguments (`None` for the others) after a run that
    /// started from `values` and ended with `memory`, and the result.
    pub(crate) fn new(values: &[Value], memory: &Memory, result: Option<Value>) -> Ran {
        let arrays = values
            .iter()
            .map(|v| match v {
                Value::Array(r) => memory.get(*r).map(<[Value]>::to_vec),
                _ => None,
            })
            .collect();
        Ran { arrays, result }
    }

    /// The final integer cells of argument `k` (a slice of integers).
    pub fn ints(&self, k: usize) -> Vec<i128> {
        self.cells(k).filter_map(Value::as_int).collect()
    }

    /// The final boolean cells of argument `k`.
    pub fn bools(&self, k: usize) -> Vec<bool> {
        self.cells(k).filter_map(Value::as_bool).collect()
    }

    fn cells(&self, k: usize) -> impl Iterator<Item = &Value> {
        self.arrays.get(k).into_iter().flatten().flatten()
    }

    /// The integer result.
    pub fn int_result(&self) -> Result<i128, CallError> {
        self.result
            .as_ref()
            .and_then(Value::as_int)
            .ok_or(CallError::NoResult("integer"))
    }

    /// The boolean result.
    pub fn bool_result(&self) -> Result<bool, CallError> {
        self.result
            .as_ref()
            .and_then(Value::as_bool)
            .ok_or(CallError::NoResult("boolean"))
    }
}

/// The arguments as interpreter values, arrays allocated in `memory`.
pub(crate) fn values(args: Vec<Arg>, memory: &mut Memory) -> Vec<Value> {
    args.into_iter()
        .map(|a| match a {
            Arg::Int(i) => Value::Int(i),
            Arg::Bool(b) => Value::Bool(b),
            Arg::Ints(cells) => Value::Array(memory.alloc_ints(&cells)),
            Arg::Bools(cells) => Value::Array(memory.alloc_bools(&cells)),
        })
        .collect()
}

/// Whether `args` satisfy the entry precondition of `method` (`name`, or `Class.name`) of the
/// program `pvl`, values and permissions ([`super::admits`]): the inputs the proof covers.
pub fn admitted(pvl: &str, method: &str, args: Vec<Arg>) -> Result<(), CallError> {
    let program = parse(pvl)?;
    let mut memory = Memory::new();
    let values = values(args, &mut memory);
    admit(&program, method, &values, memory)
}

fn parse(pvl: &str) -> Result<crate::syntax::Program, CallError> {
    Ok(crate::syntax::parse(pvl)
        .map_err(|_| CallError::Parse)?
        .program)
}

/// The caller owns every cell it passes: permissions the interpreter cannot follow exactly do
/// not refuse the input.
fn admit(
    program: &crate::syntax::Program,
    method: &str,
    values: &[Value],
    memory: Memory,
) -> Result<(), CallError> {
    let limits = Limits {
        admit_untracked_permissions: true,
        ..unlimited()
    };
    super::admits(program, method, values, &[], memory, &limits).map_err(|e| match e {
        InterpError::Infeasible { reason, .. } => CallError::Uncovered(reason),
        e => CallError::Run(e.to_string()),
    })
}

/// No size limit beyond the caller's memory: the caller's slices are the data.
fn unlimited() -> Limits {
    Limits {
        max_steps: u64::MAX,
        max_threads: u64::MAX,
        max_cells: u64::MAX,
        ..Limits::default()
    }
}

/// Runs `method` (`name`, or `Class.name`) of the program `pvl` on the CPU with `args`, once
/// they are [`admitted`]; specifications are not evaluated during the run (the proof covers
/// it).
pub fn run_on_cpu(pvl: &str, method: &str, args: Vec<Arg>) -> Result<Ran, CallError> {
    let program = parse(pvl)?;
    let mut memory = Memory::new();
    let values = values(args, &mut memory);
    admit(&program, method, &values, memory.clone())?;
    super::run(&program, method, &values, memory, &unlimited())
        .map(|out| Ran::new(&values, &out.memory, out.result))
        .map_err(|e| CallError::Run(e.to_string()))
}
