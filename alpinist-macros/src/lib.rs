//! Proc-macro attributes for verified GPU kernels written in Rust (filled by a later issue).
