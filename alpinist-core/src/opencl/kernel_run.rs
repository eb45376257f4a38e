//! Runs a kernel written in Rust on an OpenCL device: what the launcher of
//! `#[alpinist::kernel]` (`<name>::launch`) calls. The kernel's `PVL` (after its optimisations,
//! as verified) goes through the same code generation and device run as `alpinist run`: one
//! kernel per par block the host code reaches, the host code on the interpreter
//! ([`super::device_run::DeviceLauncher`]), integers as OpenCL `int`.

use super::codegen::{generate_method, IntWidth};
use super::device_run::DeviceLauncher;
use super::platform::DeviceInfo;
use crate::interp::{Limits, Memory, Value};

/// An argument of the launch, in the kernel's parameter order (ghost parameters left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    Int(i128),
    Bool(bool),
    /// A slice of integers (`&[i32]`, `&[usize]`, ..), its cells copied in.
    Ints(Vec<i128>),
    Bools(Vec<bool>),
}

/// Why a launch did not run.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The kernel's PVL does not parse or generate (a bug: it was verified).
    #[error("the kernel has no OpenCL form: {0}")]
    Generate(String),
    /// The device's runtime or compiler.
    #[error("{0}")]
    Device(String),
    /// The run: the host code on the interpreter, or a launch.
    #[error("the run failed: {0}")]
    Run(String),
}

/// What a launch computed: the final contents of the slices, and the result.
#[derive(Clone, Debug)]
pub struct Ran {
    arrays: Vec<Option<Vec<Value>>>,
    result: Option<Value>,
}

impl Ran {
    /// The final integer cells of argument `k` (a slice of integers).
    pub fn ints(&self, k: usize) -> Vec<i128> {
        self.cells(k)
            .filter_map(|v| match v {
                Value::Int(i) => Some(*i),
                _ => None,
            })
            .collect()
    }

    /// The final boolean cells of argument `k`.
    pub fn bools(&self, k: usize) -> Vec<bool> {
        self.cells(k)
            .filter_map(|v| match v {
                Value::Bool(b) => Some(*b),
                _ => None,
            })
            .collect()
    }

    fn cells(&self, k: usize) -> impl Iterator<Item = &Value> {
        self.arrays.get(k).into_iter().flatten().flatten()
    }

    /// The integer result.
    pub fn int_result(&self) -> Result<i128, LaunchError> {
        match self.result {
            Some(Value::Int(i)) => Ok(i),
            _ => Err(LaunchError::Run("the kernel returned no integer".into())),
        }
    }

    /// The boolean result.
    pub fn bool_result(&self) -> Result<bool, LaunchError> {
        match self.result {
            Some(Value::Bool(b)) => Ok(b),
            _ => Err(LaunchError::Run("the kernel returned no boolean".into())),
        }
    }
}

/// Runs method `method` of the program `pvl` on `device` with `args`. The program is
/// generated and compiled at each call.
pub fn run_on_device(
    pvl: &str,
    method: &str,
    device: &DeviceInfo,
    args: Vec<Arg>,
) -> Result<Ran, LaunchError> {
    let program = crate::syntax::parse(pvl)
        .map_err(|_| LaunchError::Generate("its PVL does not parse".into()))?
        .program;
    let kernels = generate_method(&program, method, IntWidth::Bits32)
        .map_err(|e| LaunchError::Generate(e.to_string()))?;
    let mut memory = Memory::new();
    let values: Vec<Value> = args
        .into_iter()
        .map(|a| match a {
            Arg::Int(i) => Value::Int(i),
            Arg::Bool(b) => Value::Bool(b),
            Arg::Ints(cells) => Value::Array(memory.alloc_ints(&cells)),
            Arg::Bools(cells) => {
                Value::Array(memory.alloc(cells.into_iter().map(Value::Bool).collect()))
            }
        })
        .collect();
    let mut launcher =
        DeviceLauncher::new(&kernels, device).map_err(|e| LaunchError::Device(e.to_string()))?;
    // The interpreter runs the host code only; the cells are the caller's slices, already
    // in memory.
    let limits = Limits {
        max_cells: u64::MAX,
        ..Limits::default().beyond_the_interpreter()
    };
    let out = launcher
        .run(&program, &values, memory, &limits)
        .map_err(|e| LaunchError::Run(e.to_string()))?;
    let arrays = values
        .iter()
        .map(|v| match v {
            Value::Array(r) => out.memory.get(*r).map(<[Value]>::to_vec),
            _ => None,
        })
        .collect();
    Ok(Ran {
        arrays,
        result: out.result,
    })
}
