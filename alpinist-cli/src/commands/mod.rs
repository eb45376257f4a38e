//! One module per subcommand.

pub mod check;
pub mod fmt;
pub mod opencl;
pub mod optimise;
pub mod report;
pub mod verify;

use std::path::Path;

use alpinist_core::check::Checked;
use alpinist_core::syntax::{self, Parsed};

use crate::diagnostics::{emit, emit_plain};
use crate::exit::Exit;
use crate::input::{self, Source};

/// Read and parse a file, reporting warnings and errors; `Err` carries the exit code.
pub fn parse_file(path: &Path) -> Result<(Source, Parsed), Exit> {
    let source = input::read(path).map_err(|e| {
        emit_plain(&e);
        match e {
            input::InputError::Io(..) => Exit::BadInput,
            input::InputError::NotUtf8 { .. } => Exit::BadInput,
        }
    })?;
    match syntax::parse(&source.text) {
        Ok(parsed) => {
            for warning in &parsed.warnings {
                emit(&source, warning.clone());
            }
            Ok((source, parsed))
        }
        Err(errors) => {
            for error in errors {
                emit(&source, error);
            }
            Err(Exit::BadInput)
        }
    }
}

/// Parse, resolve and type-check a file.
pub fn front_end(path: &Path) -> Result<(Source, Parsed, Checked), Exit> {
    let (source, parsed) = parse_file(path)?;
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
