//! A `SKILL.md`'s YAML frontmatter as a JSON object, read within bounds.
//!
//! yaml_serde expands aliases as it deserializes: it stops alias chains
//! that jump more than a hundred times the document's events, but a few
//! kilobytes of `*anchor` references to one long list still expand into
//! millions of values before anything sees them. So the value is built by
//! our own visitor, which counts every node and byte it makes and fails
//! past [`MAX_NODES`] or [`MAX_BYTES`], before the expansion is allocated.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The longest frontmatter block read, in bytes.
pub const MAX_BLOCK: usize = 16 << 10;
/// The most values (scalars, lists, maps, keys) the frontmatter makes.
const MAX_NODES: usize = 4096;
/// The most bytes of strings the frontmatter makes (aliases counted each
/// time they are expanded).
const MAX_BYTES: usize = 64 << 10;
/// The deepest nesting kept (yaml_serde stops at 128 on its own).
const MAX_DEPTH: usize = 32;

/// The frontmatter of `manifest` (the text between its leading `---` lines)
/// as a JSON object with a non-empty string `name` and `description`.
pub fn parse(manifest: &str) -> Result<Map<String, Value>, String> {
    let text = manifest.strip_prefix('\u{feff}').unwrap_or(manifest);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("SKILL.md does not start with a `---` frontmatter block".into());
    }
    let start = text.find('\n').map_or(text.len(), |index| index + 1);
    let mut end = start;
    let block = loop {
        let Some(line) = lines.next() else {
            return Err("SKILL.md's frontmatter has no closing `---`".into());
        };
        if line.trim_end() == "---" {
            break &text[start..end];
        }
        end += line.len();
        if end - start > MAX_BLOCK {
            return Err(format!("SKILL.md's frontmatter is longer than {MAX_BLOCK} bytes"));
        }
    };
    let mut made = Made { nodes: 0, bytes: 0 };
    let deserializer = yaml_serde::Deserializer::from_str(block);
    let value = Bounded { made: &mut made, depth: 0 }
        .deserialize(deserializer)
        .map_err(|err| format!("SKILL.md's frontmatter is not YAML the host reads: {err}"))?;
    let Value::Object(frontmatter) = value else {
        return Err("SKILL.md's frontmatter is not a mapping".into());
    };
    for field in ["name", "description"] {
        match frontmatter.get(field) {
            Some(Value::String(text)) if !text.is_empty() => {}
            _ => return Err(format!("SKILL.md's frontmatter has no non-empty string `{field}`")),
        }
    }
    Ok(frontmatter)
}

/// What the values built so far hold.
struct Made {
    nodes: usize,
    bytes: usize,
}

impl Made {
    fn take<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        self.nodes += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        if self.nodes > MAX_NODES || self.bytes > MAX_BYTES {
            return Err(E::custom(format_args!(
                "it expands past {MAX_NODES} values or {MAX_BYTES} bytes (aliases count each time)"
            )));
        }
        Ok(())
    }
}

/// Builds one JSON value, charging [`Made`] before each allocation.
struct Bounded<'a> {
    made: &'a mut Made,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom(format_args!("it nests deeper than {MAX_DEPTH}")));
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.made.take(0)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        self.made.take(0)?;
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        self.made.take(0)?;
        Ok(Value::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        self.made.take(0)?;
        Ok(Value::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        self.made.take(0)?;
        // JSON has no NaN or infinity: they become null, as serde_json does.
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        self.made.take(value.len())?;
        Ok(Value::String(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.made.take(0)?;
        let mut items = Vec::new();
        while let Some(item) =
            seq.next_element_seed(Bounded { made: &mut *self.made, depth: self.depth + 1 })?
        {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.made.take(0)?;
        let mut object = Map::new();
        while let Some(key) = map.next_key_seed(Bounded { made: &mut *self.made, depth: self.depth + 1 })? {
            // JSON keys are strings: a scalar key is written as JSON text.
            let key = match key {
                Value::String(text) => text,
                Value::Array(_) | Value::Object(_) => {
                    return Err(de::Error::custom("a mapping key is a list or a mapping"));
                }
                scalar => scalar.to_string(),
            };
            let value = map.next_value_seed(Bounded { made: &mut *self.made, depth: self.depth + 1 })?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_description_and_the_other_fields() {
        let got = parse("---\nname: pdf-forms\ndescription: Fill PDF forms\nlicense: MIT\nmetadata:\n  version: 2\n---\n# Body\n").unwrap();
        assert_eq!(
            Value::Object(got),
            serde_json::json!({"name": "pdf-forms", "description": "Fill PDF forms", "license": "MIT", "metadata": {"version": 2}})
        );
    }

    #[test]
    fn refuses_what_is_not_a_frontmatter_block() {
        assert!(parse("# no frontmatter").unwrap_err().contains("does not start"));
        assert!(parse("---\nname: a\ndescription: b\n").unwrap_err().contains("no closing"));
        assert!(parse("---\n- a\n---\n").unwrap_err().contains("not a mapping"));
        assert!(parse("---\nname: a\n---\n").unwrap_err().contains("`description`"));
        assert!(parse("---\nname: [a]\ndescription: b\n---\n").unwrap_err().contains("`name`"));
    }

    #[test]
    fn an_alias_bomb_stops_before_it_expands() {
        // 500 scalars under one anchor, referenced 3,000 times: 1.5 million
        // values from 14 KiB, were each alias expanded.
        let mut text = String::from("---\nname: a\ndescription: b\nlist: &l [");
        text.push_str(&"1,".repeat(500));
        text.push_str("1]\nmore: [");
        text.push_str(&"*l,".repeat(3000));
        text.push_str("*l]\n---\n");
        let err = parse(&text).unwrap_err();
        assert!(err.contains("expands past"), "{err}");
    }

    #[test]
    fn a_long_block_is_refused_without_parsing() {
        let text = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(MAX_BLOCK));
        assert!(parse(&text).unwrap_err().contains("longer than"));
    }
}
