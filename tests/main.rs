mod common;
mod properties;
