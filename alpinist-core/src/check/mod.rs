//! Name resolution and type checking.
