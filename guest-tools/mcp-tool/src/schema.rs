//! JSON Schemas (2020-12) generated from Rust types with schemars: the
//! input schema of a tool's arguments, the output schema of its structured
//! content, and the flat form an elicitation asks the user to fill in.
//!
//! Subschemas are inlined (no `$ref`, so clients need not resolve
//! references and the host's checks stay cheap), formats are only those
//! JSON Schema defines, and the root carries neither `$schema` (2020-12 is
//! MCP's default dialect) nor a title made from the Rust type's name. A doc
//! comment on the type becomes the schema's `description`.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

/// The arguments of a tool that takes none: an empty object, nothing else
/// allowed (`{"type": "object", "properties": {}, "additionalProperties": false}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> Schema {
        schemars::json_schema!({ "type": "object", "properties": {}, "additionalProperties": false })
    }
}

/// The JSON Schema of `T` as arguments (as it deserializes): a tool's input schema.
pub fn input_schema<T: JsonSchema + ?Sized>() -> Value {
    generate::<T>(settings())
}

/// The JSON Schema of `T` as a result (as it serializes): a tool's output schema.
pub fn output_schema<T: JsonSchema + ?Sized>() -> Value {
    generate::<T>(settings().for_serialize())
}

/// The JSON Schema of `T` as an elicitation form: a flat object whose
/// properties are strings, numbers, integers, booleans or enums, as MCP
/// allows. `Option` fields become optional fields of their inner type, and
/// string formats MCP does not know (it knows `email`, `uri`, `date` and
/// `date-time`) are dropped. A type that is not flat still yields a schema,
/// which the host refuses when the question is asked.
pub fn form_schema<T: JsonSchema + ?Sized>() -> Value {
    let mut schema = input_schema::<T>();
    if let Some(root) = schema.as_object_mut() {
        root.retain(|key, _| {
            matches!(key.as_str(), "type" | "title" | "description" | "properties" | "required")
        });
        if let Some(Value::Object(properties)) = root.get_mut("properties") {
            for property in properties.values_mut() {
                if let Value::Object(property) = property {
                    flatten_form_field(property);
                }
            }
        }
    }
    schema
}

/// `{"type": ["string", "null"]}` → `{"type": "string"}`; `{"anyOf": [X,
/// {"type": "null"}]}` → X (with the field's own description and default);
/// unknown string formats dropped.
fn flatten_form_field(property: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = property.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            property.insert("type".into(), kept[0].clone());
        }
    }
    if let Some(Value::Array(branches)) = property.get("anyOf") {
        let kept: Vec<&Value> = branches.iter().filter(|b| b.get("type") != Some(&"null".into())).collect();
        if let [Value::Object(inner)] = kept.as_slice() {
            let mut merged = inner.clone();
            property.remove("anyOf");
            merged.extend(std::mem::take(property));
            *property = merged;
        }
    }
    // `enum` with a null among the values (an `Option` of a unit enum).
    if let Some(Value::Array(values)) = property.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let known_format =
        |format: &Value| matches!(format.as_str(), Some("email" | "uri" | "date" | "date-time"));
    if property.get("type") == Some(&"string".into())
        && property.get("format").is_some_and(|f| !known_format(f))
    {
        property.remove("format");
    }
}

/// Keeps only the formats JSON Schema 2020-12 defines: schemars also writes
/// `uint64` and the like, which strict validators refuse.
struct KnownFormats;

impl Transform for KnownFormats {
    fn transform(&mut self, schema: &mut Schema) {
        const DEFINED: [&str; 19] = [
            "date-time",
            "date",
            "time",
            "duration",
            "email",
            "idn-email",
            "hostname",
            "idn-hostname",
            "ipv4",
            "ipv6",
            "uri",
            "uri-reference",
            "iri",
            "iri-reference",
            "uuid",
            "uri-template",
            "json-pointer",
            "relative-json-pointer",
            "regex",
        ];
        if schema.get("format").and_then(Value::as_str).is_some_and(|format| !DEFINED.contains(&format)) {
            schema.remove("format");
        }
        transform_subschemas(self, schema);
    }
}

fn settings() -> SchemaSettings {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    settings
}

fn generate<T: JsonSchema + ?Sized>(settings: SchemaSettings) -> Value {
    generate_with(settings, &mut |generator| generator.subschema_for::<T>())
}

/// The part of [`generate`] that does not depend on the type, compiled once
/// rather than once per type (components stay smaller).
#[inline(never)]
fn generate_with(
    settings: SchemaSettings,
    schema_of: &mut dyn FnMut(&mut SchemaGenerator) -> Schema,
) -> Value {
    let mut generator = settings.into_generator();
    let mut schema = schema_of(&mut generator);
    KnownFormats.transform(&mut schema);
    let mut schema = schema.to_value();
    if let Some(root) = schema.as_object_mut() {
        // Recursive types still refer to their definitions.
        let definitions = generator.take_definitions(true);
        if !definitions.is_empty() {
            root.insert("$defs".into(), Value::Object(definitions));
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    /// Echo's arguments.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// Text to return
        text: String,
        #[serde(default)]
        #[schemars(range(max = 10))]
        times: u8,
    }

    #[derive(Serialize, JsonSchema)]
    struct Out {
        text: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Colour {
        Red,
        Green,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Form {
        /// Your name
        name: String,
        email: Option<String>,
        #[schemars(email)]
        contact: String,
        colour: Option<Colour>,
        #[serde(default = "thirty")]
        age: u32,
    }

    fn thirty() -> u32 {
        30
    }

    #[test]
    fn arguments_become_an_object_schema_with_descriptions_defaults_and_ranges() {
        assert_eq!(
            super::input_schema::<Args>(),
            json!({
                "description": "Echo's arguments.",
                "type": "object",
                "properties": {
                    "text": { "type": "string", "description": "Text to return" },
                    "times": { "type": "integer", "minimum": 0, "maximum": 10, "default": 0 }
                },
                "required": ["text"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn results_schema_is_the_serialized_shape() {
        assert_eq!(
            super::output_schema::<Out>(),
            json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            })
        );
    }

    #[test]
    fn no_args_is_an_empty_closed_object() {
        assert_eq!(
            super::input_schema::<super::NoArgs>(),
            json!({ "type": "object", "properties": {}, "additionalProperties": false })
        );
    }

    /// A recursive type cannot be inlined: its schema refers to itself.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        children: Vec<Tree>,
    }

    #[test]
    fn a_recursive_type_keeps_its_definition() {
        let schema = super::input_schema::<Tree>();
        assert_eq!(schema["properties"]["children"]["items"]["$ref"], "#/$defs/Tree", "{schema}");
        assert_eq!(schema["$defs"]["Tree"]["type"], "object", "{schema}");
    }

    #[test]
    fn a_form_is_flat_with_optional_fields_of_their_inner_type() {
        assert_eq!(
            super::form_schema::<Form>(),
            json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "Your name" },
                    "email": { "type": "string" },
                    "contact": { "type": "string", "format": "email" },
                    "colour": { "type": "string", "enum": ["Red", "Green"] },
                    "age": { "type": "integer", "minimum": 0, "default": 30 }
                },
                "required": ["name", "contact"]
            })
        );
    }
}
