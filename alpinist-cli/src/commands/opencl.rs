//! `alpinist scan-test` and `alpinist devices`: they need the `opencl` cargo feature.

use std::path::Path;

use crate::exit::Exit;

#[cfg(not(feature = "opencl"))]
fn without_feature(subcommand: &str) -> Exit {
    crate::diagnostics::emit_plain(format_args!(
        "`alpinist {subcommand}` needs OpenCL, and this binary was built without it; rebuild with \
         `cargo build --release --features opencl` (needs an OpenCL ICD loader, e.g. Debian's \
         `ocl-icd-opencl-dev` and `pocl-opencl-icd`)"
    ));
    Exit::Environment
}

pub fn scan_test(file: &Path) -> Exit {
    #[cfg(not(feature = "opencl"))]
    {
        let _ = file;
        without_feature("scan-test")
    }
    #[cfg(feature = "opencl")]
    {
        super::front_end_then_pending(&[file.to_path_buf()], "scan-test")
    }
}

pub fn devices() -> Exit {
    #[cfg(not(feature = "opencl"))]
    {
        without_feature("devices")
    }
    #[cfg(feature = "opencl")]
    {
        super::not_implemented("devices")
    }
}
