//! Helpers shared by the modules of the integration-test binary.

#![allow(dead_code)]

use serde_json::Value;

/// Remove every `"span"` key, recursively, so that two IR trees serialised with `serde_json`
/// can be compared ignoring source positions.
pub fn strip_spans(v: Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| k != "span")
                .map(|(k, v)| (k, strip_spans(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_spans).collect()),
        other => other,
    }
}

/// `strip_spans(serde_json::to_value(program))`.
pub fn spanless(program: &alpinist::syntax::Program) -> Value {
    strip_spans(serde_json::to_value(program).expect("the IR serialises to JSON"))
}

/// The first place where two JSON values differ, as a JSON-pointer-like path with both sides.
pub fn first_difference(a: &Value, b: &Value) -> Option<String> {
    fn go(a: &Value, b: &Value, path: &mut String) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    match (x.get(k), y.get(k)) {
                        (Some(u), Some(v)) => {
                            let len = path.len();
                            path.push('/');
                            path.push_str(k);
                            if let Some(d) = go(u, v, path) {
                                return Some(d);
                            }
                            path.truncate(len);
                        }
                        (u, v) => return Some(format!("{path}/{k}: {u:?} vs {v:?}")),
                    }
                }
                None
            }
            (Value::Array(x), Value::Array(y)) => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    if let Some(d) = go(u, v, path) {
                        return Some(d);
                    }
                    path.truncate(len);
                }
                if x.len() != y.len() {
                    return Some(format!("{path}: length {} vs {}", x.len(), y.len()));
                }
                None
            }
            _ if a == b => None,
            _ => Some(format!("{path}:\n  left:  {a}\n  right: {b}")),
        }
    }
    go(a, b, &mut String::new())
}
