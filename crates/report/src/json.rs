//! The JSON document of a result (`-J`, `results.json`).

use model::results::RunResult;

/// Pretty-printed JSON with a trailing newline.
pub fn to_string(r: &RunResult) -> String {
    // Serialising plain data with string keys cannot fail.
    let mut s =
        serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
