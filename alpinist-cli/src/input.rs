//! Reading source files (or standard input) as UTF-8 text.

use std::io::Read;
use std::path::Path;

pub struct Source {
    /// The name diagnostics show: the path as given, or `<stdin>`.
    pub name: String,
    pub text: String,
}

pub enum InputError {
    Io(String, std::io::Error),
    NotUtf8 { name: String, offset: usize },
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Io(name, e) => write!(f, "cannot read {name}: {e}"),
            InputError::NotUtf8 { name, offset } => {
                write!(
                    f,
                    "{name} is not UTF-8 text (invalid byte at offset {offset})"
                )
            }
        }
    }
}

pub fn read(path: &Path) -> Result<Source, InputError> {
    let (name, bytes) = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| InputError::Io("<stdin>".into(), e))?;
        ("<stdin>".to_string(), bytes)
    } else {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| InputError::Io(name.clone(), e))?;
        (name, bytes)
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Source { name, text }),
        Err(e) => Err(InputError::NotUtf8 {
            name,
            offset: e.utf8_error().valid_up_to(),
        }),
    }
}
