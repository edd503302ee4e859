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
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::Semaphore;

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
        Ok(Schema { json: Arc::new(json), validator, inline: shape.nodes <= INLINE_NODES && !shape.costly })
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

/// Why a check did not pass.
#[derive(Debug, PartialEq, Eq)]
pub enum CheckFailure {
    /// The instance breaks the schema: the first violation.
    Invalid(String),
    /// The check did not end within the time the call had left.
    TooSlow(Duration),
}

/// Runs schema checks: cheap ones inline, the rest on at most
/// [`CHECK_THREADS`] blocking threads, each bounded by a deadline.
#[derive(Clone, Debug)]
pub struct Checker {
    threads: Arc<Semaphore>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker { threads: Arc::new(Semaphore::new(CHECK_THREADS)) }
    }
}

impl Checker {
    /// Checks `instance` against `schema`, giving up at `deadline` (the
    /// caller's answer then says so; the thread finishes in the background,
    /// still holding its permit).
    pub async fn check(
        &self,
        schema: &Arc<Schema>,
        instance: Arc<Value>,
        deadline: tokio::time::Instant,
    ) -> Result<(), CheckFailure> {
        if schema.inline {
            return schema.first_violation(&instance).map_or(Ok(()), |why| Err(CheckFailure::Invalid(why)));
        }
        let budget = deadline.saturating_duration_since(tokio::time::Instant::now());
        let run = async {
            let permit =
                self.threads.clone().acquire_owned().await.expect("the check semaphore is never closed");
            let schema = schema.clone();
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                schema.first_violation(&instance)
            })
            .await
        };
        match tokio::time::timeout_at(deadline, run).await {
            Ok(Ok(None)) => Ok(()),
            Ok(Ok(Some(why))) => Err(CheckFailure::Invalid(why)),
            Ok(Err(panicked)) => Err(CheckFailure::Invalid(format!("the schema check failed: {panicked}"))),
            Err(_) => Err(CheckFailure::TooSlow(budget)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(schema: Value) -> Result<Schema, SchemaError> {
        Schema::load(&schema.to_string(), &SCHEMA_LIMITS)
    }

    #[test]
    fn a_plain_object_schema_loads_and_is_checked_inline() {
        let schema = load(json!({ "type": "object", "properties": { "n": { "type": "integer" } } })).unwrap();
        assert!(schema.inline);
        assert_eq!(schema.first_violation(&json!({ "n": 1 })), None);
        assert!(schema.first_violation(&json!({ "n": "x" })).unwrap().starts_with("/n: "));
    }

    #[test]
    fn wide_branches_are_refused_at_load_naming_the_limit() {
        let branches: Vec<Value> = (0..2000).map(|n| json!({ "const": n })).collect();
        let err = load(json!({ "type": "array", "items": { "anyOf": branches } })).unwrap_err().to_string();
        assert!(err.contains("`anyOf`") && err.contains("2000") && err.contains("64"), "{err}");
    }

    #[test]
    fn huge_deep_and_wordy_schemas_are_refused() {
        let mut deep = json!({ "type": "string" });
        for _ in 0..100 {
            deep = json!({ "items": deep });
        }
        assert!(load(deep).unwrap_err().to_string().contains("nesting depth"));
        let many: Map<String, Value> = (0..5000).map(|n| (format!("p{n}"), json!({}))).collect();
        let err = load(json!({ "type": "object", "properties": many })).unwrap_err().to_string();
        assert!(err.contains("bytes") || err.contains("nodes"), "{err}");
        let text = format!("{{\"description\": \"{}\"}}", "x".repeat(300 << 10));
        assert!(Schema::load(&text, &SCHEMA_LIMITS).unwrap_err().to_string().contains("bytes"));
    }

    #[test]
    fn patterns_use_a_linear_time_engine() {
        let schema = load(json!({ "type": "string", "pattern": "^(a+)+$" })).unwrap();
        let hostile = Value::String(format!("{}!", "a".repeat(100_000)));
        let started = std::time::Instant::now();
        assert!(schema.first_violation(&hostile).is_some());
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn costly_checks_run_off_the_runtime_and_give_up_at_the_deadline() {
        let branches: Vec<Value> = (0..64).map(|n| json!({ "const": n })).collect();
        let schema = Arc::new(load(json!({ "type": "array", "items": { "anyOf": branches } })).unwrap());
        assert!(!schema.inline);
        let checker = Checker::default();
        let soon = tokio::time::Instant::now() + Duration::from_secs(20);
        let zeros = Arc::new(Value::Array(vec![json!(0); 8000]));
        assert_eq!(checker.check(&schema, zeros, soon).await, Ok(()));
        let bad = Arc::new(json!([0, 1, 99]));
        let failure = checker.check(&schema, bad, soon).await.unwrap_err();
        assert!(matches!(&failure, CheckFailure::Invalid(why) if why.starts_with("/2")), "{failure:?}");
        // Both check threads busy (as with two hostile checks still
        // running): a call gives up at its deadline instead of waiting.
        let busy = checker.threads.clone().acquire_many_owned(CHECK_THREADS as u32).await.unwrap();
        let shortly = tokio::time::Instant::now() + Duration::from_millis(50);
        let failure = checker.check(&schema, Arc::new(json!([0])), shortly).await.unwrap_err();
        assert!(matches!(failure, CheckFailure::TooSlow(_)), "{failure:?}");
        drop(busy);
    }

    /// Random and adversarial schemas at load, random instances against
    /// those that load: never a panic, every refusal names a limit or the
    /// schema's flaw, and every check ends quickly. Seeded (`FUZZ_SEED`
    /// replays); `FUZZ_SCHEMAS` sets the count (`just fuzz` runs 20 000).
    #[test]
    fn random_schemas_and_arguments_never_break_the_checks() {
        let count: u64 = std::env::var("FUZZ_SCHEMAS").ok().and_then(|v| v.parse().ok()).unwrap_or(400);
        let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
        let mut rng = Rng(seed | 1);
        let (mut loaded, mut refused, mut checks) = (0u64, 0u64, 0u64);
        let mut slowest = Duration::ZERO;
        for n in 0..count {
            let schema = if n % 4 == 0 { adversarial(&mut rng) } else { random_schema(&mut rng, 4) };
            let text = schema.to_string();
            if std::env::var("FUZZ_TRACE").is_ok() {
                eprintln!("schema {n}: {text}");
            }
            let schema = match Schema::load(&text, &SCHEMA_LIMITS) {
                Ok(schema) => schema,
                Err(err) => {
                    refused += 1;
                    assert!(!err.to_string().is_empty());
                    continue;
                }
            };
            loaded += 1;
            for _ in 0..8 {
                let instance = random_value(&mut rng, 4);
                let started = std::time::Instant::now();
                let _ = schema.first_violation(&instance);
                slowest = slowest.max(started.elapsed());
                checks += 1;
            }
        }
        eprintln!(
            "schema fuzz (FUZZ_SEED={seed}): {count} schemas, {loaded} loaded, {refused} refused, \
             {checks} checks, slowest {slowest:?}"
        );
        assert!(slowest < Duration::from_secs(2), "a check took {slowest:?} (FUZZ_SEED={seed})");
    }

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545F4914F6CDD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        fn pick<T: Clone>(&mut self, items: &[T]) -> T {
            items[self.below(items.len() as u64) as usize].clone()
        }
    }

    const PATTERNS: [&str; 8] = ["^a+$", "(a+)+$", "(?=a)", "[", "^(a|aa)*b$", "\\d{1,3}", "(x+x+)+y", ""];

    fn random_schema(rng: &mut Rng, depth: u32) -> Value {
        let mut map = Map::new();
        for _ in 0..rng.below(5) {
            let (key, value) = match rng.below(if depth == 0 { 9 } else { 17 }) {
                0 => (
                    "type",
                    json!(rng.pick(&[
                        "object", "array", "string", "integer", "number", "boolean", "null", "nope"
                    ])),
                ),
                1 => ("minimum", json!(rng.below(100) as i64 - 50)),
                2 => ("maxLength", json!(rng.below(10))),
                3 => ("pattern", json!(rng.pick(&PATTERNS))),
                4 => ("enum", Value::Array((0..rng.below(6)).map(|_| random_value(rng, 1)).collect())),
                5 => ("const", random_value(rng, 1)),
                6 => ("uniqueItems", json!(rng.below(2) == 0)),
                7 => (
                    "$ref",
                    json!(rng.pick(&["#", "#/$defs/a", "#/nope", "http://169.254.169.254/x", "other.json"])),
                ),
                8 => ("required", json!(["a", "b"])),
                9 => ("items", random_schema(rng, depth - 1)),
                10 => ("not", random_schema(rng, depth - 1)),
                11 => (
                    "properties",
                    json!({ "a": random_schema(rng, depth - 1), "b": random_schema(rng, depth - 1) }),
                ),
                12 => ("$defs", json!({ "a": random_schema(rng, depth - 1) })),
                13 => ("if", random_schema(rng, depth - 1)),
                14 => ("additionalProperties", random_schema(rng, depth - 1)),
                _ => {
                    let key = rng.pick(&["anyOf", "oneOf", "allOf"]);
                    let width = rng.pick(&[0, 1, 3, 64, 65, 500]);
                    // Wide branch lists get leaf branches, so the schema stays small enough to generate.
                    let below = if width > 3 { 0 } else { depth - 1 };
                    let branches: Vec<Value> = (0..width).map(|_| random_schema(rng, below)).collect();
                    (key, Value::Array(branches))
                }
            };
            map.insert(key.to_string(), value);
        }
        Value::Object(map)
    }

    /// Shapes made to be expensive: as wide, deep and nested as the limits
    /// allow, or just past them.
    fn adversarial(rng: &mut Rng) -> Value {
        let width = rng.pick(&[32, 64, 65]);
        let branch = |k: u64| json!({ "anyOf": (0..width).map(|n| json!({ "const": n * 1000 + k })).collect::<Vec<_>>() });
        match rng.below(4) {
            0 => json!({ "type": "array", "items": { "anyOf": (0..width).map(branch).collect::<Vec<_>>() } }),
            1 => {
                let mut deep = json!({ "type": "string", "pattern": rng.pick(&PATTERNS) });
                for _ in 0..rng.pick(&[8, 15, 20]) {
                    deep = json!({ "anyOf": [deep, { "items": { "type": "integer" } }] });
                }
                deep
            }
            2 => {
                json!({ "$defs": { "a": { "anyOf": [{ "$ref": "#/$defs/a" }, { "items": { "$ref": "#/$defs/a" } }] } }, "$ref": "#/$defs/a" })
            }
            _ => {
                json!({ "type": "array", "uniqueItems": true, "items": { "oneOf": (0..width).map(|n| json!({ "type": "integer", "multipleOf": n + 1 })).collect::<Vec<_>>() } })
            }
        }
    }

    fn random_value(rng: &mut Rng, depth: u32) -> Value {
        match rng.below(if depth == 0 { 5 } else { 8 }) {
            0 => Value::Null,
            1 => json!(rng.below(3) as i64 - 1),
            2 => json!(rng.pick(&["", "a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "🦀"])),
            3 => json!(rng.below(2) == 0),
            4 => json!((rng.next() as f64) / 3.0),
            5 => Value::Array(vec![json!(0); rng.pick(&[0, 10, 2000])]),
            6 => Value::Array((0..rng.below(6)).map(|_| random_value(rng, depth - 1)).collect()),
            _ => json!({ "a": random_value(rng, depth - 1), "b": random_value(rng, depth - 1) }),
        }
    }
}
