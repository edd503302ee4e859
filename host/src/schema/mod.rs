//! Tool schemas are guest data, and arguments are client data: both are
//! treated as hostile here.
//!
//! A schema is bounded when its component loads (bytes, nodes, branches of
//! `anyOf`/`oneOf`/`allOf`, nesting depth; `pattern`s use a linear-time
//! regex engine) and refused with the limit it broke. At run time a check
//! stops at the first violation, and any check that could be costly runs on
//! a blocking thread, one of at most [`CHECK_THREADS`] at a time, within
//! the call's deadline: a hostile schema and a large instance can cost a few
//! threads' time, never the async workers, the host's memory or a call that
//! outlives its `--timeout`.

use std::sync::Arc;

use serde_json::{Map, Value};

mod check;
#[cfg(test)]
mod tests;

pub use check::{CheckFailure, Checker};

/// How large a tool schema may be. Real tool schemas are far smaller (a
/// large one has a few hundred nodes); these bound what a hostile one can
/// make a check cost.
#[derive(Clone, Copy, Debug)]
pub struct SchemaLimits {
    /// Bytes of JSON text.
    pub max_bytes: usize,
    /// JSON values (objects, arrays, strings, numbers...) in the schema.
    pub max_nodes: usize,
    /// Subschemas in one `anyOf`, `oneOf` or `allOf`.
    pub max_branches: usize,
    /// Nesting depth of the JSON.
    pub max_depth: usize,
}

/// The limits every tool schema is held to (documented in SECURITY.md).
pub const SCHEMA_LIMITS: SchemaLimits =
    SchemaLimits { max_bytes: 256 << 10, max_nodes: 4096, max_branches: 64, max_depth: 32 };

/// Checks that may run at once off the async workers. A check that outlives
/// its call keeps its thread until it ends, so hostile checks pile up here,
/// not in the host's memory or on its runtime.
pub const CHECK_THREADS: usize = 2;

/// Compiled regexes in a schema may take this much memory each.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Schemas with at most this many nodes and no combinators or references
/// are checked inline: their cost is linear in the instance and tiny.
const INLINE_NODES: usize = 256;

/// Keywords whose cost can multiply with the instance or with each other.
const COSTLY_KEYWORDS: [&str; 12] = [
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Why a schema was refused at load.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The text is not a JSON object.
    #[error("is not a JSON object: {0}")]
    NotAnObject(String),
    /// It breaks one of [`SCHEMA_LIMITS`].
    #[error("{what} is {found}, more than the {limit} the host accepts in a tool schema")]
    TooLarge {
        /// Which measure.
        what: &'static str,
        /// The schema's value.
        found: usize,
        /// The limit.
        limit: usize,
    },
    /// jsonschema refused it.
    #[error("is not a valid JSON Schema: {0}")]
    Invalid(String),
}

/// A schema, bounded and compiled.
#[derive(Debug)]
pub struct Schema {
    /// The schema as the component declared it (listed to clients).
    pub json: Arc<Map<String, Value>>,
    validator: jsonschema::Validator,
    /// Whether a check is cheap enough to run inline on an async worker.
    inline: bool,
    /// The schema is `{"type": "object"}` and annotations: any object
    /// passes, so checking an object is skipped.
    any_object: bool,
}

impl Schema {
    /// Parses, bounds and compiles `text`.
    pub fn load(text: &str, limits: &SchemaLimits) -> Result<Schema, SchemaError> {
        if text.len() > limits.max_bytes {
            return Err(SchemaError::TooLarge {
                what: "its size in bytes",
                found: text.len(),
                limit: limits.max_bytes,
            });
        }
        let json: Map<String, Value> = match serde_json::from_str(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(SchemaError::NotAnObject("it is another JSON value".into())),
            Err(err) => return Err(SchemaError::NotAnObject(format!("not valid JSON: {err}"))),
        };
        let shape = Shape::of(&json, limits)?;
        let schema = Value::Object(json);
        let validator = jsonschema::options()
            // Linear-time matching: no catastrophic backtracking on a
            // hostile `pattern`, at the price of lookarounds.
            .with_pattern_options(
                jsonschema::PatternOptions::regex()
                    .size_limit(REGEX_SIZE_LIMIT)
                    .dfa_size_limit(REGEX_SIZE_LIMIT),
            )
            .build(&schema)
            .map_err(|err| SchemaError::Invalid(err.to_string()))?;
        let Value::Object(json) = schema else { unreachable!("built from an object") };
        let inline = shape.nodes <= INLINE_NODES && !shape.costly;
        Ok(Schema { any_object: accepts_any_object(&json), json: Arc::new(json), validator, inline })
    }

    /// Whether `instance` passes without running the validator: the schema
    /// accepts every object and `instance` is one.
    pub(crate) fn passes_unchecked(&self, instance: &Value) -> bool {
        self.any_object && instance.is_object()
    }

    /// The first way `instance` breaks the schema, naming where (`/path: ...`).
    pub fn first_violation(&self, instance: &Value) -> Option<String> {
        // `is_valid` allocates nothing; only a failure pays for a message.
        if self.validator.is_valid(instance) {
            return None;
        }
        let error = self.validator.validate(instance).err()?;
        let at = error.instance_path().to_string();
        Some(if at.is_empty() { error.to_string() } else { format!("{at}: {error}") })
    }
}

/// Keywords that never reject an instance.
const ANNOTATIONS: [&str; 8] =
    ["$schema", "$id", "$comment", "title", "description", "examples", "default", "deprecated"];

/// Whether `schema` is `{"type": "object"}` plus annotations only, which
/// every JSON object satisfies (many tools take no arguments and say so).
fn accepts_any_object(schema: &Map<String, Value>) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
        && schema.keys().all(|key| key == "type" || ANNOTATIONS.contains(&key.as_str()))
}

/// What a walk over a schema found.
struct Shape {
    nodes: usize,
    costly: bool,
}

impl Shape {
    fn of(schema: &Map<String, Value>, limits: &SchemaLimits) -> Result<Shape, SchemaError> {
        let mut shape = Shape { nodes: 1, costly: false };
        // Iterative, so a deep schema cannot overflow the host's stack.
        let mut stack: Vec<(&Value, usize)> = schema.values().map(|value| (value, 2)).collect();
        shape.visit_keys(schema, limits)?;
        while let Some((value, depth)) = stack.pop() {
            shape.nodes += 1;
            if shape.nodes > limits.max_nodes {
                return Err(SchemaError::TooLarge {
                    what: "its number of nodes",
                    found: shape.nodes,
                    limit: limits.max_nodes,
                });
            }
            if depth > limits.max_depth {
                return Err(SchemaError::TooLarge {
                    what: "its nesting depth",
                    found: depth,
                    limit: limits.max_depth,
                });
            }
            match value {
                Value::Object(map) => {
                    shape.visit_keys(map, limits)?;
                    stack.extend(map.values().map(|value| (value, depth + 1)));
                }
                Value::Array(items) => stack.extend(items.iter().map(|value| (value, depth + 1))),
                _ => {}
            }
        }
        Ok(shape)
    }

    fn visit_keys(&mut self, map: &Map<String, Value>, limits: &SchemaLimits) -> Result<(), SchemaError> {
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = map.get(key)
                && branches.len() > limits.max_branches
            {
                return Err(SchemaError::TooLarge {
                    what: match key {
                        "anyOf" => "the number of branches of an `anyOf`",
                        "oneOf" => "the number of branches of a `oneOf`",
                        _ => "the number of branches of an `allOf`",
                    },
                    found: branches.len(),
                    limit: limits.max_branches,
                });
            }
        }
        self.costly |= COSTLY_KEYWORDS.iter().any(|key| map.contains_key(*key));
        Ok(())
    }
}
