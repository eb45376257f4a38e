//! One module per subcommand.

pub mod check;
pub mod fmt;
pub mod opencl;
pub mod optimise;
pub mod report;
pub mod run;
pub mod tune;
pub mod verify;

use std::path::{Path, PathBuf};

use alpinist_core::check::Checked;
use alpinist_core::syntax::{self, Parsed};

use crate::diagnostics::{emit, emit_plain};
use crate::exit::Exit;
use crate::input::{self, Source};

/// The wall-clock limit per obligation, in seconds, of every command that verifies (`verify`'s
/// `--timeout` default): a safety net on top of Z3's deterministic `rlimit`, which Z3 polls
/// only at some points — on some nonlinear obligations it runs for many minutes past it
/// (`verify --int32 tests/data/scan/missing_root_clear_blelloch.pvl` ran past 15 minutes
/// without one). An obligation it stops is unknown (exit 3), never verified. Dafny's default
/// per-batch limit is of this order too (30 s).
pub const OBLIGATION_TIMEOUT_S: f64 = 60.0;

/// [`OBLIGATION_TIMEOUT_S`] or a `--timeout`, in milliseconds for `Limits::timeout_ms`; 0 (or
/// anything not a positive number) is none.
pub fn timeout_ms(seconds: f64) -> Option<u32> {
    (seconds.is_finite() && seconds > 0.0).then(|| (seconds * 1000.0).min(u32::MAX as f64) as u32)
}

/// Read and parse a file, reporting warnings and errors; `Err` carries the exit code.
pub fn parse_file(path: &Path) -> Result<(Source, Parsed), Exit> {
    let source = read(path)?;
    let parsed = parse_source(&source)?;
    Ok((source, parsed))
}

fn read(path: &Path) -> Result<Source, Exit> {
    input::read(path).map_err(|e| {
        emit_plain(&e);
        match e {
            input::InputError::Io(..) => Exit::BadInput,
            input::InputError::NotUtf8 { .. } => Exit::BadInput,
        }
    })
}

fn parse_source(source: &Source) -> Result<Parsed, Exit> {
    match syntax::parse(&source.text) {
        Ok(parsed) => {
            for warning in &parsed.warnings {
                emit(source, warning.clone());
            }
            Ok(parsed)
        }
        Err(errors) => {
            for error in errors {
                emit(source, error);
            }
            Err(Exit::BadInput)
        }
    }
}

/// Several files read as one program, as VerCors reads its file arguments: every file is
/// parsed on its own first, so that a syntax error (an unclosed comment, say) is reported in
/// its own file and never read as part of the next; then their texts are joined
/// ([`Source::join`]) and parsed as one.
pub fn parse_program(paths: &[PathBuf]) -> Result<(Source, Parsed), Exit> {
    if let [path] = paths {
        return parse_file(path);
    }
    let mut sources = Vec::new();
    let mut bad = false;
    for path in paths {
        match read(path) {
            Ok(source) => {
                if let Err(errors) = syntax::parse(&source.text) {
                    for error in errors {
                        emit(&source, error);
                    }
                    bad = true;
                }
                sources.push(source);
            }
            Err(_) => bad = true,
        }
    }
    if bad {
        return Err(Exit::BadInput);
    }
    let source = Source::join(sources);
    let parsed = parse_source(&source)?;
    Ok((source, parsed))
}

/// [`front_end`] of several files read as one program ([`parse_program`]).
/// `check` and `verify` read process-algebra models: they become the classes, predicates and
/// trusted methods that encode them (`alpinist_core::models`); what that does not lower
/// stays, and `check` refuses it (E0227). The commands that print or run a program
/// (`optimise`, `run`, OpenCL) use [`front_end`], which refuses every model.
pub fn front_end_program(paths: &[PathBuf]) -> Result<(Source, Parsed, Checked), Exit> {
    let (source, mut parsed) = parse_program(paths)?;
    if let Some(lowered) = alpinist_core::models::lower(&parsed.program) {
        parsed.program = lowered;
    }
    check_parsed(source, parsed)
}

/// Parse, resolve and type-check a file.
pub fn front_end(path: &Path) -> Result<(Source, Parsed, Checked), Exit> {
    let (source, parsed) = parse_file(path)?;
    check_parsed(source, parsed)
}

fn check_parsed(source: Source, parsed: Parsed) -> Result<(Source, Parsed, Checked), Exit> {
    match alpinist_core::check::check(&parsed.program) {
        Ok(checked) => {
            for warning in &checked.warnings {
                emit(&source, warning.clone());
            }
            Ok((source, parsed, checked))
        }
        Err(errors) => {
            for error in errors {
                emit(&source, error);
            }
            Err(Exit::BadInput)
        }
    }
}
