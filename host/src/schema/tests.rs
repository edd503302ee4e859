//! Schema bounds and checks, including a seeded fuzz over random and
//! adversarial schemas (`FUZZ_SCHEMAS` sets how many).

#![allow(clippy::print_stderr)] // the fuzz test's figures, for whoever runs it

use std::time::Duration;

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

#[test]
fn only_an_any_object_schema_skips_the_validator_and_only_for_objects() {
    let any = load(json!({ "type": "object", "description": "no arguments" })).unwrap();
    assert!(any.passes_unchecked(&json!({ "whatever": [1, 2] })));
    // Not an object: the validator still decides (and refuses it).
    assert!(!any.passes_unchecked(&json!([1])));
    assert!(any.first_violation(&json!([1])).is_some());
    for constrained in [
        json!({ "type": "object", "properties": { "n": { "type": "integer" } } }),
        json!({ "type": "object", "required": ["n"] }),
        json!({ "type": "object", "additionalProperties": false }),
        json!({ "type": ["object", "null"] }),
        json!({ "description": "no type at all" }),
    ] {
        assert!(!load(constrained.clone()).unwrap().passes_unchecked(&json!({})), "{constrained}");
    }
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
                json!(
                    rng.pick(&["object", "array", "string", "integer", "number", "boolean", "null", "nope"])
                ),
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
    let branch =
        |k: u64| json!({ "anyOf": (0..width).map(|n| json!({ "const": n * 1000 + k })).collect::<Vec<_>>() });
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
