//! A tool's arguments from the command line: the ARGS object, with each
//! `--arg KEY=VALUE` set over it, its value typed by the tool's input schema.

use serde_json::{Map, Value};

/// ARGS (or `{}`) with `pairs` set over it, in order. A value stays the
/// string typed when `input_schema` types its key as a string (so `--arg
/// zip=01234` or `--arg name=true` is not read as a number or a boolean);
/// otherwise it is read as JSON, and kept as a string if it is not JSON.
pub(super) fn tool_arguments(
    arguments: Option<&Map<String, Value>>,
    pairs: &[(String, String)],
    input_schema: &Map<String, Value>,
) -> Map<String, Value> {
    let mut merged = arguments.cloned().unwrap_or_default();
    for (key, text) in pairs {
        let value = if typed_as_string(input_schema, key) {
            Value::String(text.clone())
        } else {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        };
        merged.insert(key.clone(), value);
    }
    merged
}

/// Whether the schema's property `key` may be a string: `"type": "string"`,
/// or a list of types with `"string"` in it.
fn typed_as_string(input_schema: &Map<String, Value>, key: &str) -> bool {
    let Some(property) = input_schema.get("properties").and_then(|p| p.get(key)) else {
        return false;
    };
    match property.get("type") {
        Some(Value::String(kind)) => kind == "string",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "string"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Map<String, Value> {
        let schema = json!({
            "type": "object",
            "properties": {
                "text": { "type": "string" },
                "label": { "type": ["string", "null"] },
                "count": { "type": "integer" },
            }
        });
        schema.as_object().unwrap().clone()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect()
    }

    #[test]
    fn a_string_property_keeps_the_text_as_typed() {
        let merged = tool_arguments(None, &pairs(&[("text", "01234"), ("label", "true")]), &schema());
        assert_eq!(Value::Object(merged), json!({ "text": "01234", "label": "true" }));
    }

    #[test]
    fn other_values_are_json_or_else_text() {
        let given = pairs(&[("count", "3"), ("tags", r#"["a","b"]"#), ("free", "not json")]);
        let merged = tool_arguments(None, &given, &schema());
        assert_eq!(Value::Object(merged), json!({ "count": 3, "tags": ["a", "b"], "free": "not json" }));
    }

    #[test]
    fn pairs_are_set_over_the_arguments_object() {
        let base = json!({ "text": "old", "count": 1 }).as_object().unwrap().clone();
        let merged = tool_arguments(Some(&base), &pairs(&[("text", "new")]), &schema());
        assert_eq!(Value::Object(merged), json!({ "text": "new", "count": 1 }));
    }
}
