//! Values and memory: what the interpreter computes with and what it hands back.
//!
//! Integers are `i128`; every arithmetic operation is checked and an overflow is an
//! [`InterpError::Overflow`](super::InterpError::Overflow), never a wrapped value (PVL integers
//! are unbounded; no kernel we run comes near 2^127, and refusing is sound where wrapping is not).
//!
//! Arrays live in a [`Memory`] and are passed by reference ([`ArrayRef`]): two parameters given
//! the same reference alias, exactly as on a GPU. An `int[][]` is an array whose cells hold
//! references to row arrays (or `null`).
//!
//! Sequences (`seq<T>`) are immutable values. So that [`Value`] stays `Copy`, a sequence is a
//! [`SeqRef`] into an append-only store beside the arrays; two sequences are equal when their
//! elements are (`==` compares contents, never references). The store is not part of a
//! [`Memory`]'s equality: two memories are equal when their arrays are.

use std::fmt;

/// A reference to an array in a [`Memory`]: its index there, stable for the memory's lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArrayRef(pub usize);

/// A sequence value in a [`Memory`]'s sequence store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeqRef(pub usize);

/// A runtime value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    Int(i128),
    Bool(bool),
    /// `null` (also the default cell value of an array of arrays).
    Null,
    Array(ArrayRef),
    /// A `seq<T>` value (compared by contents).
    Seq(SeqRef),
}

impl Value {
    /// A short name of the value's kind, for error messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
            Value::Array(_) => "array",
            Value::Seq(_) => "seq",
        }
    }

    pub fn as_int(&self) -> Option<i128> {
        match *self {
            Value::Int(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<ArrayRef> {
        match *self {
            Value::Array(r) => Some(r),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Null => f.write_str("null"),
            Value::Array(r) => write!(f, "array#{}", r.0),
            Value::Seq(r) => write!(f, "seq#{}", r.0),
        }
    }
}

/// All arrays of one run, indexed by [`ArrayRef`], and the sequence values, indexed by
/// [`SeqRef`]. Nothing is freed during a run.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    arrays: Vec<Vec<Value>>,
    seqs: Vec<Vec<Value>>,
    cells: usize,
}

/// Equal when the arrays are (the sequence store holds values, not state).
impl PartialEq for Memory {
    fn eq(&self, other: &Memory) -> bool {
        self.arrays == other.arrays
    }
}

impl Eq for Memory {}

impl Memory {
    pub fn new() -> Memory {
        Memory::default()
    }

    /// Adds an array holding `cells` and returns its reference.
    pub fn alloc(&mut self, cells: Vec<Value>) -> ArrayRef {
        self.cells += cells.len();
        self.arrays.push(cells);
        ArrayRef(self.arrays.len() - 1)
    }

    /// Adds an `int[]` holding `values`.
    pub fn alloc_ints(&mut self, values: &[i128]) -> ArrayRef {
        self.alloc(values.iter().map(|&v| Value::Int(v)).collect())
    }

    /// Adds a `boolean[]` holding `values`.
    pub fn alloc_bools(&mut self, values: &[bool]) -> ArrayRef {
        self.alloc(values.iter().map(|&v| Value::Bool(v)).collect())
    }

    /// Adds an `int[][]`: one row array per element of `rows`, then the array of rows.
    pub fn alloc_matrix(&mut self, rows: &[Vec<i128>]) -> ArrayRef {
        let refs = rows
            .iter()
            .map(|row| Value::Array(self.alloc_ints(row)))
            .collect();
        self.alloc(refs)
    }

    /// Adds a sequence value holding `elems`.
    pub fn alloc_seq(&mut self, elems: Vec<Value>) -> SeqRef {
        self.cells += elems.len();
        self.seqs.push(elems);
        SeqRef(self.seqs.len() - 1)
    }

    /// Adds a `seq<int>` holding `values`.
    pub fn alloc_int_seq(&mut self, values: &[i128]) -> SeqRef {
        self.alloc_seq(values.iter().map(|&v| Value::Int(v)).collect())
    }

    /// The elements of a sequence, `None` for a reference this memory never handed out.
    pub fn seq(&self, r: SeqRef) -> Option<&[Value]> {
        self.seqs.get(r.0).map(Vec::as_slice)
    }

    /// The cells of an array, `None` for a reference this memory never handed out.
    pub fn get(&self, r: ArrayRef) -> Option<&[Value]> {
        self.arrays.get(r.0).map(Vec::as_slice)
    }

    /// The cells of an `int[]` as integers; `None` if `r` is unknown or a cell is not an int.
    pub fn ints(&self, r: ArrayRef) -> Option<Vec<i128>> {
        self.get(r)?.iter().map(Value::as_int).collect()
    }

    /// The rows of an `int[][]`; `None` if a row is null or not an `int[]`.
    pub fn matrix(&self, r: ArrayRef) -> Option<Vec<Vec<i128>>> {
        self.get(r)?
            .iter()
            .map(|row| self.ints(row.as_array()?))
            .collect()
    }

    /// Number of arrays allocated so far.
    pub fn len(&self) -> usize {
        self.arrays.len()
    }

    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// Total number of cells over all arrays and sequences (what [`super::Limits::max_cells`] bounds).
    pub fn total_cells(&self) -> usize {
        self.cells
    }

    pub(crate) fn cell(&self, r: ArrayRef, i: usize) -> Option<Value> {
        self.arrays.get(r.0)?.get(i).copied()
    }

    pub(crate) fn set_cell(&mut self, r: ArrayRef, i: usize, v: Value) -> bool {
        match self.arrays.get_mut(r.0).and_then(|a| a.get_mut(i)) {
            Some(c) => {
                *c = v;
                true
            }
            None => false,
        }
    }
}
