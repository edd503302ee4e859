//! The fields of a form a tool asks the user to fill (form elicitation):
//! how each is shown at a prompt, and what a typed answer means for it —
//! its type checked, its bounds and choices kept, its default taken for an
//! empty answer. Only the flat, primitive fields MCP allows in a form.

use rmcp::model::ElicitationSchema;
use serde_json::{Map, Value};

use crate::log_text::{cut_to, escape_controls};

/// The longest a field's title or description is shown, in bytes.
const SHOWN_TEXT: usize = 200;

/// One field of a requested form.
pub(super) struct Field {
    /// Its key in the answer.
    pub name: String,
    /// Its schema (`type`, `title`, `default`, bounds, choices).
    schema: Value,
    /// The form cannot be accepted without it.
    pub required: bool,
}

/// What an answer typed for a field means.
#[derive(Debug, PartialEq)]
pub(super) enum Reading {
    /// This value.
    Value(Value),
    /// No value: the field is optional and has no default.
    Skip,
    /// Nothing typed for a required field without a default: the user
    /// declines the form.
    Decline,
}

/// The form's fields, in the order the tool gave them.
pub(super) fn fields(schema: &ElicitationSchema) -> Vec<Field> {
    let order = schema.property_order.clone().unwrap_or_else(|| schema.properties.keys().cloned().collect());
    let required = schema.required.clone().unwrap_or_default();
    order
        .into_iter()
        .filter_map(|name| {
            let schema = serde_json::to_value(schema.properties.get(&name)?).ok()?;
            Some(Field { required: required.contains(&name), name, schema })
        })
        .collect()
}

/// The form filled with every field's default, if every field has one.
pub(super) fn all_defaults(fields: &[Field]) -> Option<Map<String, Value>> {
    fields.iter().map(|field| Some((field.name.clone(), field.default()?))).collect()
}

impl Field {
    fn text(&self, key: &str) -> Option<String> {
        let text = self.schema.get(key)?.as_str()?;
        Some(escape_controls(&cut_to(text.to_string(), SHOWN_TEXT)).into_owned())
    }

    fn kind(&self) -> &str {
        self.schema.get("type").and_then(Value::as_str).unwrap_or("string")
    }

    fn default(&self) -> Option<Value> {
        self.schema.get("default").cloned()
    }

    /// The values it may take, for a single or multiple choice.
    fn choices(&self) -> Option<Vec<String>> {
        let holder = if self.kind() == "array" { self.schema.get("items")? } else { &self.schema };
        if let Some(values) = holder.get("enum").and_then(Value::as_array) {
            return Some(values.iter().filter_map(|v| v.as_str().map(str::to_string)).collect());
        }
        let titled = holder.get("oneOf").or_else(|| holder.get("anyOf"))?.as_array()?;
        Some(titled.iter().filter_map(|v| v.get("const")?.as_str().map(str::to_string)).collect())
    }

    /// The line that asks for it: its title, what it takes, its default.
    pub fn prompt(&self) -> String {
        let title = self.text("title").unwrap_or_else(|| escape_controls(&self.name).into_owned());
        let mut about = vec![match self.kind() {
            "boolean" => "y/n".to_string(),
            "array" => "comma-separated".to_string(),
            other => other.to_string(),
        }];
        if let Some(choices) = self.choices() {
            let shown: Vec<String> = choices.iter().map(|c| escape_controls(c).into_owned()).collect();
            about.push(format!("one of: {}", shown.join(", ")));
        }
        for (key, word) in [("minimum", "at least"), ("maximum", "at most")] {
            // As a number reads (rmcp keeps bounds as floats: 1, not 1.0).
            if let Some(bound) = self.schema.get(key).and_then(Value::as_f64) {
                about.push(format!("{word} {bound}"));
            }
        }
        match self.default() {
            Some(default) => about.push(format!("empty: {}", escape_controls(&shown(&default)))),
            None if self.required => about.push("required".into()),
            None => about.push("empty: skip".into()),
        }
        let description = self.text("description").map(|d| format!(" — {d}")).unwrap_or_default();
        format!("{title}{description} ({}): ", about.join("; "))
    }

    /// What `answer` (a line typed, without its line break) means; `Err`
    /// says why it is not a value of this field, to ask again.
    pub fn read(&self, answer: &str) -> Result<Reading, String> {
        let answer = answer.trim();
        if answer.is_empty() {
            return Ok(match self.default() {
                Some(default) => Reading::Value(default),
                None if self.required => Reading::Decline,
                None => Reading::Skip,
            });
        }
        let value = match self.kind() {
            "boolean" => match answer.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer y or n".into()),
            },
            "integer" => {
                let n: i64 = answer.parse().map_err(|_| "expected a whole number".to_string())?;
                self.within(n as f64)?;
                Value::from(n)
            }
            "number" => {
                let n: f64 = answer.parse().map_err(|_| "expected a number".to_string())?;
                self.within(n)?;
                serde_json::Number::from_f64(n).map(Value::Number).ok_or("expected a finite number")?
            }
            "array" => {
                let picked: Vec<&str> = answer.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
                for pick in &picked {
                    self.chosen(pick)?;
                }
                Value::from(picked)
            }
            _ => {
                self.chosen(answer)?;
                let length = answer.chars().count() as f64;
                let bound = |key| self.schema.get(key).and_then(Value::as_f64);
                if let Some(min) = bound("minLength")
                    && length < min
                {
                    return Err(format!("at least {min} characters"));
                }
                if let Some(max) = bound("maxLength")
                    && length > max
                {
                    return Err(format!("at most {max} characters"));
                }
                Value::from(answer)
            }
        };
        Ok(Reading::Value(value))
    }

    /// `Err` unless `n` is within the field's minimum and maximum.
    fn within(&self, n: f64) -> Result<(), String> {
        let bound = |key| self.schema.get(key).and_then(Value::as_f64);
        match (bound("minimum"), bound("maximum")) {
            (Some(min), _) if n < min => Err(format!("at least {min}")),
            (_, Some(max)) if n > max => Err(format!("at most {max}")),
            _ => Ok(()),
        }
    }

    /// `Err` unless `pick` is one of the field's choices (when it has any).
    fn chosen(&self, pick: &str) -> Result<(), String> {
        match self.choices() {
            Some(choices) if !choices.iter().any(|choice| choice == pick) => {
                let shown: Vec<String> = choices.iter().map(|c| escape_controls(c).into_owned()).collect();
                Err(format!("choose from: {}", shown.join(", ")))
            }
            _ => Ok(()),
        }
    }
}

/// A default as the user would type it.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "y".into(),
        Value::Bool(false) => "n".into(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(schema: Value) -> Vec<Field> {
        fields(&serde_json::from_value(schema).unwrap())
    }

    #[test]
    fn answers_are_checked_against_their_field() {
        let fields = form(json!({
            "type": "object",
            "properties": {
                "age": { "type": "integer", "minimum": 0, "maximum": 150 },
                "ok": { "type": "boolean", "default": false },
                "color": { "type": "string", "enum": ["red", "green"] },
                "note": { "type": "string", "maxLength": 3 },
                "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] } },
            },
            "required": ["age"]
        }));
        let field = |name: &str| fields.iter().find(|f| f.name == name).unwrap();
        assert_eq!(field("age").read("42"), Ok(Reading::Value(json!(42))));
        assert!(field("age").read("4.5").is_err());
        assert!(field("age").read("200").is_err());
        assert_eq!(field("age").read(""), Ok(Reading::Decline));
        assert_eq!(field("ok").read(""), Ok(Reading::Value(json!(false))));
        assert_eq!(field("ok").read("Y"), Ok(Reading::Value(json!(true))));
        assert!(field("ok").read("maybe").is_err());
        assert!(field("color").read("blue").is_err());
        assert_eq!(field("color").read(""), Ok(Reading::Skip));
        assert!(field("note").read("long").is_err());
        assert_eq!(field("tags").read("a, b"), Ok(Reading::Value(json!(["a", "b"]))));
        assert!(field("tags").read("a,c").is_err());
        assert!(all_defaults(&fields).is_none());
    }

    #[test]
    fn a_prompt_shows_what_a_field_takes_with_its_text_escaped() {
        let fields = form(json!({
            "type": "object",
            "properties": { "n": { "type": "number", "title": "N\x1b[2J", "default": 2.5, "minimum": 1 } }
        }));
        assert_eq!(fields[0].prompt(), "N\\u{1b}[2J (number; at least 1; empty: 2.5): ");
        assert_eq!(all_defaults(&fields), Some(json!({ "n": 2.5 }).as_object().unwrap().clone()));
    }
}
