//! A plain function's result as JSON, by the rules [`super::values`]
//! reads arguments with (64-bit integers as strings, bytes as base64,
//! `"NaN"` and the infinities as strings), within a budget of host memory
//! charged before each piece is allocated: a guest's result costs the host
//! at most that much (the call's `--max-memory`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Number, Value};
use wasmtime::component::{Type, Val};

use super::values::{INFINITY, NAN, NEG_INFINITY, is_bytes};
use crate::budget::{Budget, Charge};

/// A result larger than the budget it was converted within.
#[derive(Debug, thiserror::Error)]
#[error("as JSON it would take more of the host's memory than the call may use (--max-memory)")]
pub struct TooLarge;

/// What one JSON value costs the host besides its strings' bytes: the
/// `Value` (32 bytes) and its slot in the array or map holding it.
const VALUE_COST: usize = 48;

/// A component value of type `ty` as JSON, by the rules
/// [`super::values::from_json`] reads, within `budget` bytes of host
/// memory, each piece charged before it is made: [`VALUE_COST`] a value,
/// and the bytes of its strings (a flag, a case, a tag or a field's name
/// each a string of its own).
pub fn to_json(ty: &Type, val: &Val, budget: &mut Charge<&Budget>) -> Result<Value, TooLarge> {
    spend(budget, VALUE_COST)?;
    Ok(match (ty, val) {
        (_, Val::Bool(b)) => Value::Bool(*b),
        (_, Val::S8(n)) => Value::from(*n),
        (_, Val::U8(n)) => Value::from(*n),
        (_, Val::S16(n)) => Value::from(*n),
        (_, Val::U16(n)) => Value::from(*n),
        (_, Val::S32(n)) => Value::from(*n),
        (_, Val::U32(n)) => Value::from(*n),
        // Beyond 2^53 most clients' JSON numbers lose digits: strings.
        (_, Val::S64(n)) => Value::String(n.to_string()),
        (_, Val::U64(n)) => Value::String(n.to_string()),
        // The shortest text that reads back as the same f32, so 0.1 stays
        // 0.1 rather than 0.10000000149011612.
        (_, Val::Float32(f)) => float_json(f.to_string().parse::<f64>().unwrap_or(f64::from(*f))),
        (_, Val::Float64(f)) => float_json(*f),
        (_, Val::Char(c)) => Value::String(c.to_string()),
        (_, Val::String(text)) => {
            spend(budget, text.len())?;
            Value::String(text.clone())
        }
        (Type::List(list), Val::List(items)) if is_bytes(&list.ty()) => {
            // The bytes, then their base64.
            spend(budget, items.len().saturating_add(items.len().div_ceil(3) * 4))?;
            let bytes: Vec<u8> =
                items.iter().map(|item| if let Val::U8(b) = item { *b } else { 0 }).collect();
            Value::String(BASE64.encode(bytes))
        }
        (Type::List(list), Val::List(items)) => {
            let element = list.ty();
            Value::Array(items.iter().map(|item| to_json(&element, item, budget)).collect::<Result<_, _>>()?)
        }
        (Type::Tuple(tuple), Val::Tuple(items)) => Value::Array(
            tuple
                .types()
                .zip(items)
                .map(|(ty, item)| to_json(&ty, item, budget))
                .collect::<Result<_, _>>()?,
        ),
        (Type::Record(record), Val::Record(fields)) => {
            let mut object = Map::with_capacity(fields.len());
            for (field, (name, item)) in record.fields().zip(fields) {
                spend(budget, name.len().saturating_add(VALUE_COST))?;
                object.insert(name.clone(), to_json(&field.ty, item, budget)?);
            }
            Value::Object(object)
        }
        (Type::Variant(variant), Val::Variant(tag, payload)) => {
            spend(budget, tag.len().saturating_add(2 * VALUE_COST))?;
            let mut object = Map::new();
            object.insert("tag".into(), Value::String(tag.clone()));
            let case = variant.cases().find(|case| case.name == tag.as_str()).and_then(|case| case.ty);
            if let (Some(payload), Some(ty)) = (payload, case) {
                object.insert("value".into(), to_json(&ty, payload, budget)?);
            }
            Value::Object(object)
        }
        (_, Val::Enum(name)) => {
            spend(budget, name.len())?;
            Value::String(name.clone())
        }
        (_, Val::Flags(names)) => {
            let cost = names.iter().map(|name| name.len() + VALUE_COST).fold(0, usize::saturating_add);
            spend(budget, cost)?;
            Value::Array(names.iter().map(|name| Value::String(name.clone())).collect())
        }
        (_, Val::Option(None)) => Value::Null,
        (Type::Option(option), Val::Option(Some(inner))) => {
            let inner_ty = option.ty();
            let inner = to_json(&inner_ty, inner, budget)?;
            if matches!(inner_ty, Type::Option(_)) {
                let mut object = Map::new();
                object.insert("some".into(), inner);
                Value::Object(object)
            } else {
                inner
            }
        }
        (Type::Result(result), Val::Result(outcome)) => {
            let (key, payload, ty) = match outcome {
                Ok(payload) => ("ok", payload, result.ok()),
                Err(payload) => ("err", payload, result.err()),
            };
            let payload = match (payload, ty) {
                (Some(payload), Some(ty)) => to_json(&ty, payload, budget)?,
                _ => Value::Null,
            };
            let mut object = Map::new();
            object.insert(key.into(), payload);
            Value::Object(object)
        }
        // Functions with other types are not tools (`super::exports`), and
        // wasmtime lifts a result as its type says.
        _ => Value::Null,
    })
}

/// Charges `bytes` more of the result to its budget.
fn spend(budget: &mut Charge<&Budget>, bytes: usize) -> Result<(), TooLarge> {
    budget.grow(bytes).map_err(|_| TooLarge)
}

/// A float as a JSON number, or as `"NaN"`, `"Infinity"` or `"-Infinity"`.
fn float_json(f: f64) -> Value {
    match Number::from_f64(f) {
        Some(number) => Value::Number(number),
        None if f.is_nan() => Value::String(NAN.into()),
        None if f > 0.0 => Value::String(INFINITY.into()),
        None => Value::String(NEG_INFINITY.into()),
    }
}
