//! Schemas from WIT text (wit-parser's own reader), by the rules in
//! [`super`]; values are checked over the wire against components built
//! from their own toolchains (tests/e2e/plain.rs).

use serde_json::{Value, json};
use wit_parser::Resolve;

use super::schema::{self, Outcome};

const WIT: &str = r#"
package example:types@0.1.0;

interface shapes {
    /// A point on the plane.
    record point {
        /// Horizontal position.
        x: s32,
        y: option<u64>,
    }
    variant shape { circle(f64), rect(point), empty }
    enum color { red, green }
    flags perms { read, write }
    resource counter { get: func() -> u32; }

    /// Takes everything.
    everything: func(p: point, s: shape, c: color, f: perms, b: list<u8>, n: option<option<u32>>,
                     t: tuple<char, string>, r: result<s8, string>) -> point;
    divide: func(a: s64, b: s64) -> result<s64, string>;
    nothing: func();
    make: func() -> counter;
    nested: func(deep: list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<list<u8>>>>>>>>>>>>>>>>>>>>>>>>>>>>);
    record r0 { a: r1, b: r1 }
    record r1 { a: r2, b: r2 }
    record r2 { a: r3, b: r3 }
    record r3 { a: r4, b: r4 }
    record r4 { a: r5, b: r5 }
    record r5 { a: r6, b: r6 }
    record r6 { a: r7, b: r7 }
    record r7 { a: r8, b: r8 }
    record r8 { a: r9, b: r9 }
    record r9 { a: r10, b: r10 }
    record r10 { a: r11, b: r11 }
    record r11 { x: u8 }
    wide: func(r: r0);
}

world types { export shapes; }
"#;

fn resolve() -> Resolve {
    let mut resolve = Resolve::default();
    resolve.push_str("types.wit", WIT).unwrap();
    resolve
}

fn schemas(name: &str) -> Result<schema::FunctionSchemas, String> {
    let resolve = resolve();
    let interface = resolve.interfaces.iter().find(|(_, i)| i.name.as_deref() == Some("shapes")).unwrap().1;
    schema::function(&resolve, &interface.functions[name])
}

fn check(schema: &Value, instance: &Value) -> bool {
    jsonschema::draft202012::new(schema).unwrap().is_valid(instance)
}

#[test]
fn every_type_gets_its_documented_schema() {
    let schemas = schemas("everything").unwrap();
    let input = &schemas.input;
    assert_eq!(input["additionalProperties"], json!(false));
    assert_eq!(
        input["required"],
        json!(["p", "s", "c", "f", "b", "t", "r"]),
        "option parameters are not required"
    );
    let point = &input["properties"]["p"];
    assert_eq!(point["description"], json!("A point on the plane."));
    assert_eq!(point["properties"]["x"]["description"], json!("Horizontal position."));
    assert_eq!(point["properties"]["x"]["maximum"], json!(i32::MAX));
    assert_eq!(point["required"], json!(["x"]));
    let valid = json!({
        "p": { "x": 1, "y": "18446744073709551615" },
        "s": { "tag": "rect", "value": { "x": -1 } },
        "c": "green",
        "f": ["write", "read"],
        "b": "AAEC",
        "n": { "some": null },
        "t": ["é", "text"],
        "r": { "err": "no" },
    });
    assert!(check(input, &valid), "{input:#}");
    for (key, wrong) in [
        ("p", json!({ "x": 1, "z": 2 })),
        ("p", json!({ "x": 2147483648i64 })),
        ("s", json!({ "tag": "empty", "value": 1 })),
        ("s", json!({ "tag": "hexagon" })),
        ("c", json!("blue")),
        ("f", json!(["read", "read"])),
        ("b", json!([0, 1])),
        ("t", json!(["ab", "text"])),
        ("r", json!({ "ok": 1, "err": "x" })),
    ] {
        let mut arguments = valid.clone();
        arguments[key] = wrong.clone();
        assert!(!check(input, &arguments), "{key} = {wrong} passed");
    }
    let output = schemas.output.unwrap();
    assert!(check(&output, &json!({ "result": { "x": 1, "y": null } })));
    assert!(!check(&output, &json!({ "result": { "x": 1, "y": 2 } })), "64-bit results are strings");
    assert_eq!(schemas.outcome, Outcome::Value);
}

#[test]
fn a_top_level_result_is_fallible_and_nothing_has_no_output() {
    let divide = schemas("divide").unwrap();
    assert_eq!(divide.outcome, Outcome::Fallible);
    assert!(check(&divide.output.unwrap(), &json!({ "result": "-9223372036854775808" })));
    let nothing = schemas("nothing").unwrap();
    assert_eq!((nothing.output, nothing.outcome), (None, Outcome::Nothing));
}

#[test]
fn handles_and_types_too_deep_are_left_out_with_a_reason() {
    let why = schemas("make").err().unwrap();
    assert!(why.contains("resource handle"), "{why}");
    // 25 levels of lists, and 12 records each holding the next twice
    // (2^11 copies of the last one, written out).
    for name in ["nested", "wide"] {
        let why = schemas(name).err().unwrap();
        assert!(why.contains("too large to describe"), "{name}: {why}");
    }
}
