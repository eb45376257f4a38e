//! `alpinist fmt FILE|- [--write]`

use std::path::Path;

use alpinist_core::syntax;

use crate::diagnostics::emit_plain;
use crate::exit::Exit;

pub fn run(path: &Path, write: bool) -> Exit {
    let (_source, parsed) = match super::parse_file(path) {
        Ok(ok) => ok,
        Err(exit) => return exit,
    };
    let printed = syntax::print(&parsed.program, &parsed.trivia);
    if write && path.as_os_str() != "-" {
        if let Err(e) = std::fs::write(path, printed) {
            emit_plain(format_args!("cannot write {}: {e}", path.display()));
            return Exit::Environment;
        }
    } else {
        print!("{printed}");
    }
    Exit::Success
}
