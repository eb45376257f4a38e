//! `alpinist check FILE...`: the front end alone (syntax, names, types, gpuopt placement). Several
//! files are one program, as for `verify`.

use std::path::PathBuf;

use crate::exit::Exit;

pub fn run(files: &[PathBuf]) -> Exit {
    match super::front_end_program(files) {
        Ok((source, ..)) => {
            eprintln!("{}: ok", source.name);
            Exit::Success
        }
        Err(exit) => exit,
    }
}
