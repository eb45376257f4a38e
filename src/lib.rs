//! The umbrella package: `alpinist` re-exports [`alpinist_core`].
pub use alpinist_core::*;
