//! JSON Schemas (2020-12) for a plain component's functions, from its WIT
//! types and docs (the rules are in [`super`]'s docs; [`super::values`]
//! reads and writes the same shapes).
//!
//! The types are the component's, so their size is the component's to
//! choose: type definitions are shared, and a schema written out from a
//! shared one repeats it, so a few nested records can stand for a schema
//! of millions of nodes. Each schema is written within [`MAX_TYPES`] type
//! visits, [`MAX_DEPTH`] levels and a budget of bytes (the guest schema's
//! own limit, charged for every name, case and doc *before* it is written,
//! so one enum of 4 000 cases shared by 1 000 functions costs each function
//! its budget, not gigabytes), and a function past them is left out; what
//! is written is then held to the same limits as a guest's own schema.

use serde_json::{Map, Value, json};
use wit_parser::{Docs, Function, Handle, Resolve, Type, TypeDefKind};

use super::values::{INFINITY, NAN, NEG_INFINITY};
use crate::budget::{Budget, Charge};

/// Type visits one function's schemas may take.
const MAX_TYPES: usize = 1024;
/// Nesting of types one schema may have.
const MAX_DEPTH: usize = 24;
/// Bytes one function's schemas may take, roughly as JSON text: what a
/// guest's own schema may be ([`crate::schema::SCHEMA_LIMITS`]).
const MAX_BYTES: usize = crate::schema::SCHEMA_LIMITS.max_bytes;
/// What a type's own JSON costs besides its names and docs (its keywords
/// and punctuation), charged per visit.
const BYTES_PER_TYPE: usize = 64;

/// Whether a schema describes what a client sends or what it receives: a
/// 64-bit integer may be sent as a number or a string, and comes back as a
/// string.
#[derive(Clone, Copy, PartialEq)]
enum Direction {
    In,
    Out,
}

/// What a function's result becomes in the tool's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// No result: the tool's result has no content.
    Nothing,
    /// `{"result": value}`.
    Value,
    /// A top-level `result<T, E>`: `ok` is `{"result": value}`, `err` an
    /// error result (`isError`) carrying the error's JSON.
    Fallible,
}

/// A function's schemas.
pub struct FunctionSchemas {
    /// The arguments object.
    pub input: Value,
    /// The structured result, if the function returns anything.
    pub output: Option<Value>,
    /// How its result is shown.
    pub outcome: Outcome,
}

/// The schemas of `function`, or why it cannot be called from JSON.
pub fn function(resolve: &Resolve, function: &Function) -> Result<FunctionSchemas, String> {
    let budget = Budget::new("a guest schema's limit", MAX_BYTES);
    let mut writer = Writer { resolve, visits: 0, charge: budget.nothing() };
    let mut properties = Map::new();
    let mut required = Vec::new();
    writer.charge_names(function.params.iter().map(|param| param.name.as_str()))?;
    for param in &function.params {
        let schema = writer.schema(&param.ty, Direction::In, 0)?;
        if !writer.is_option(&param.ty) {
            required.push(Value::String(param.name.clone()));
        }
        properties.insert(param.name.clone(), schema);
    }
    let input = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let (output, outcome) = match &function.result {
        None => (None, Outcome::Nothing),
        Some(ty) => {
            let (value, outcome) = match writer.top_level_result(ty) {
                Some(ok) => {
                    (ok.map(|ok| writer.schema(&ok, Direction::Out, 0)).transpose()?, Outcome::Fallible)
                }
                None => (Some(writer.schema(ty, Direction::Out, 0)?), Outcome::Value),
            };
            let value = value.unwrap_or_else(|| json!({ "type": "null" }));
            let output = json!({
                "type": "object",
                "properties": { "result": value },
                "required": ["result"],
                "additionalProperties": false,
            });
            (Some(output), outcome)
        }
    };
    Ok(FunctionSchemas { input, output, outcome })
}

struct Writer<'a> {
    resolve: &'a Resolve,
    visits: usize,
    /// Bytes charged so far, against [`MAX_BYTES`].
    charge: Charge<&'a Budget>,
}

impl Writer<'_> {
    /// Charges `bytes` before they are written; an error past the budget.
    fn charge(&mut self, bytes: usize) -> Result<(), String> {
        self.charge
            .grow(bytes)
            .map_err(|_| format!("its schemas would be larger than {} KiB", MAX_BYTES >> 10))
    }

    /// Charges the names of `names` (each quoted, with its comma).
    fn charge_names<'n>(&mut self, names: impl Iterator<Item = &'n str>) -> Result<(), String> {
        let bytes = names.map(|name| name.len() + 3).fold(0usize, usize::saturating_add);
        self.charge(bytes)
    }

    /// [`describe`], charging the docs first.
    fn describe(&mut self, schema: &mut Value, docs: &Docs) -> Result<(), String> {
        self.charge(docs.contents.as_deref().map_or(0, str::len))?;
        describe(schema, docs);
        Ok(())
    }

    /// `ty` without its aliases.
    fn kind(&self, ty: &Type) -> Option<&TypeDefKind> {
        let mut ty = *ty;
        loop {
            let Type::Id(id) = ty else { return None };
            match &self.resolve.types.get(id)?.kind {
                TypeDefKind::Type(inner) => ty = *inner,
                kind => return Some(kind),
            }
        }
    }

    fn is_option(&self, ty: &Type) -> bool {
        matches!(self.kind(ty), Some(TypeDefKind::Option(_)))
    }

    /// For a `result<T, E>`, `Some(T)` (itself an option: `T` may be absent).
    fn top_level_result(&self, ty: &Type) -> Option<Option<Type>> {
        match self.kind(ty) {
            Some(TypeDefKind::Result(result)) => Some(result.ok),
            _ => None,
        }
    }

    fn schema(&mut self, ty: &Type, direction: Direction, depth: usize) -> Result<Value, String> {
        self.visits += 1;
        if self.visits > MAX_TYPES || depth > MAX_DEPTH {
            return Err(format!(
                "its types are too large to describe (more than {MAX_TYPES} types or {MAX_DEPTH} levels)"
            ));
        }
        self.charge(BYTES_PER_TYPE)?;
        let integer = |min: i64, max: i64| json!({ "type": "integer", "minimum": min, "maximum": max });
        let wide = |min: Value, max: Value, pattern: &str| match direction {
            Direction::In => json!({
                "type": ["integer", "string"],
                "minimum": min,
                "maximum": max,
                "pattern": pattern,
                "description": "a 64-bit integer: a JSON integer, or a decimal string (exact beyond 2^53)",
            }),
            Direction::Out => json!({
                "type": "string",
                "pattern": pattern,
                "description": "a 64-bit integer as a decimal string",
            }),
        };
        let id = match ty {
            Type::Bool => return Ok(json!({ "type": "boolean" })),
            Type::U8 => return Ok(integer(0, u8::MAX.into())),
            Type::U16 => return Ok(integer(0, u16::MAX.into())),
            Type::U32 => return Ok(integer(0, u32::MAX.into())),
            Type::S8 => return Ok(integer(i8::MIN.into(), i8::MAX.into())),
            Type::S16 => return Ok(integer(i16::MIN.into(), i16::MAX.into())),
            Type::S32 => return Ok(integer(i32::MIN.into(), i32::MAX.into())),
            Type::U64 => return Ok(wide(json!(0), json!(u64::MAX), "^[0-9]{1,20}$")),
            Type::S64 => return Ok(wide(json!(i64::MIN), json!(i64::MAX), "^-?[0-9]{1,19}$")),
            Type::F32 | Type::F64 => {
                return Ok(json!({ "anyOf": [
                    { "type": "number" },
                    { "enum": [NAN, INFINITY, NEG_INFINITY] },
                ]}));
            }
            Type::Char => {
                return Ok(json!({ "type": "string", "minLength": 1, "maxLength": 1 }));
            }
            Type::String => return Ok(json!({ "type": "string" })),
            Type::ErrorContext => return Err("it takes or returns an `error-context`".into()),
            Type::Id(id) => *id,
        };
        let def = self.resolve.types.get(id).ok_or("it names a type the component does not define")?;
        let depth = depth + 1;
        let mut schema = match &def.kind {
            TypeDefKind::Type(inner) => self.schema(inner, direction, depth)?,
            TypeDefKind::Record(record) => {
                let mut properties = Map::new();
                let mut required = Vec::new();
                self.charge_names(record.fields.iter().map(|field| field.name.as_str()))?;
                for field in &record.fields {
                    let mut field_schema = self.schema(&field.ty, direction, depth)?;
                    self.describe(&mut field_schema, &field.docs)?;
                    if !self.is_option(&field.ty) {
                        required.push(Value::String(field.name.clone()));
                    }
                    properties.insert(field.name.clone(), field_schema);
                }
                json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": false,
                })
            }
            TypeDefKind::Tuple(tuple) => {
                let items = tuple.types.iter().map(|ty| self.schema(ty, direction, depth)).collect::<Result<
                    Vec<_>,
                    _,
                >>(
                )?;
                let n = items.len();
                // No `"items": false`: `maxItems` bounds the length as well,
                // and draft-07 validators (the TypeScript SDK's default)
                // ignore `prefixItems` and would apply it to every item.
                json!({ "type": "array", "prefixItems": items, "minItems": n, "maxItems": n })
            }
            TypeDefKind::Variant(variant) => {
                self.charge_names(variant.cases.iter().map(|case| case.name.as_str()))?;
                let mut cases = Vec::with_capacity(variant.cases.len());
                for case in &variant.cases {
                    self.charge(BYTES_PER_TYPE)?;
                    let mut properties = Map::new();
                    properties.insert("tag".into(), json!({ "const": case.name }));
                    let mut required = vec![json!("tag")];
                    if let Some(ty) = &case.ty {
                        properties.insert("value".into(), self.schema(ty, direction, depth)?);
                        required.push(json!("value"));
                    }
                    let mut case_schema = json!({
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": false,
                    });
                    self.describe(&mut case_schema, &case.docs)?;
                    cases.push(case_schema);
                }
                json!({ "oneOf": cases })
            }
            TypeDefKind::Enum(enumeration) => {
                self.charge_names(enumeration.cases.iter().map(|case| case.name.as_str()))?;
                let names: Vec<_> = enumeration.cases.iter().map(|case| case.name.clone()).collect();
                json!({ "type": "string", "enum": names })
            }
            TypeDefKind::Flags(flags) => {
                self.charge_names(flags.flags.iter().map(|flag| flag.name.as_str()))?;
                let names: Vec<_> = flags.flags.iter().map(|flag| flag.name.clone()).collect();
                json!({ "type": "array", "items": { "enum": names }, "uniqueItems": true })
            }
            TypeDefKind::Option(inner) => {
                let some = self.schema(inner, direction, depth)?;
                let some = if self.is_option(inner) {
                    json!({
                        "type": "object",
                        "properties": { "some": some },
                        "required": ["some"],
                        "additionalProperties": false,
                    })
                } else {
                    some
                };
                json!({ "anyOf": [{ "type": "null" }, some] })
            }
            TypeDefKind::Result(result) => {
                let mut branch = |key: &str, ty: &Option<Type>| -> Result<Value, String> {
                    let payload = match ty {
                        Some(ty) => self.schema(ty, direction, depth)?,
                        None => json!({ "type": "null" }),
                    };
                    Ok(json!({
                        "type": "object",
                        "properties": { key: payload },
                        "required": [key],
                        "additionalProperties": false,
                    }))
                };
                json!({ "oneOf": [branch("ok", &result.ok)?, branch("err", &result.err)?] })
            }
            TypeDefKind::List(Type::U8) => json!({
                "type": "string",
                "contentEncoding": "base64",
                "description": "bytes, base64-encoded",
            }),
            TypeDefKind::List(element) => {
                json!({ "type": "array", "items": self.schema(element, direction, depth)? })
            }
            TypeDefKind::Resource => {
                return Err(format!("it takes or returns a resource ({})", type_name(def.name.as_deref())));
            }
            TypeDefKind::Handle(Handle::Own(resource) | Handle::Borrow(resource)) => {
                let name = self.resolve.types.get(*resource).and_then(|def| def.name.as_deref());
                return Err(format!("it takes or returns a resource handle ({})", type_name(name)));
            }
            TypeDefKind::Future(_) | TypeDefKind::Stream(_) => {
                return Err("it takes or returns a `future` or a `stream`".into());
            }
            TypeDefKind::Map(..) | TypeDefKind::FixedLengthList(..) | TypeDefKind::Unknown => {
                return Err(format!(
                    "it uses a type the host cannot convert ({})",
                    type_name(def.name.as_deref())
                ));
            }
        };
        self.describe(&mut schema, &def.docs)?;
        Ok(schema)
    }
}

fn type_name(name: Option<&str>) -> String {
    name.map_or_else(|| "an unnamed type".into(), |name| format!("`{name}`"))
}

/// Puts `docs` into `schema`'s description: the innermost docs give way
/// to those nearer the use (a field's to its type's).
fn describe(schema: &mut Value, docs: &Docs) {
    if let (Some(text), Some(object)) = (docs.contents.as_deref(), schema.as_object_mut()) {
        object.insert("description".into(), Value::String(text.trim().to_string()));
    }
}
