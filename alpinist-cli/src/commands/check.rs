//! `alpinist check FILE...`: the front end alone (syntax, names, types, gpuopt placement).

use std::path::PathBuf;

use crate::exit::Exit;

pub fn run(files: &[PathBuf]) -> Exit {
    let mut worst = Exit::Success;
    for file in files {
        match super::front_end(file) {
            Ok(_) => eprintln!("{}: ok", file.display()),
            Err(exit) => worst = worst.max(exit),
        }
    }
    worst
}
