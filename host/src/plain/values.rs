//! JSON to component values and back, for plain components (the rules are
//! in [`super`]'s docs; [`super::schema`] writes the same rules as JSON
//! Schema).
//!
//! Arguments were checked against the tool's schema already, but the
//! schema cannot say everything (a 64-bit integer written as a string,
//! base64, one `char`), so every conversion here checks again and names
//! the argument that is wrong. Results are converted within a byte budget:
//! a guest's result costs the host at most that much JSON.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Number, Value};
use wasmtime::component::{Type, Val};

/// Why an argument cannot be converted, with where it is (`/p/0/x`).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
pub struct ArgumentError {
    /// JSON pointer to the value.
    pub path: String,
    /// What is wrong with it.
    pub why: String,
}

/// A result larger than the budget it was converted within.
#[derive(Debug, thiserror::Error)]
#[error("it is larger than --max-output allows")]
pub struct TooLarge;

/// The texts that stand for float values JSON has no number for.
pub const NAN: &str = "NaN";
/// See [`NAN`].
pub const INFINITY: &str = "Infinity";
/// See [`NAN`].
pub const NEG_INFINITY: &str = "-Infinity";

/// The parameters of a function, from the arguments object, in order. An
/// `option` parameter may be left out (it is then `none`).
pub fn arguments(
    params: &[(String, Type)],
    arguments: &Map<String, Value>,
) -> Result<Vec<Val>, ArgumentError> {
    if let Some(key) = arguments.keys().find(|key| !params.iter().any(|(name, _)| name == *key)) {
        let path = format!("/{}", escape_pointer(key));
        return Err(ArgumentError { path, why: "is not a parameter of this function".into() });
    }
    params
        .iter()
        .map(|(name, ty)| {
            let path = format!("/{}", escape_pointer(name));
            match arguments.get(name) {
                Some(value) => from_json(ty, value, &path),
                None if matches!(ty, Type::Option(_)) => Ok(Val::Option(None)),
                None => Err(ArgumentError { path, why: "is required".into() }),
            }
        })
        .collect()
}

/// One JSON value as a component value of type `ty`.
pub fn from_json(ty: &Type, value: &Value, path: &str) -> Result<Val, ArgumentError> {
    let wrong = |why: String| ArgumentError { path: path.to_string(), why };
    let expected = |what: &str| wrong(format!("must be {what}"));
    Ok(match ty {
        Type::Bool => Val::Bool(value.as_bool().ok_or_else(|| expected("true or false"))?),
        Type::S8 => Val::S8(integer(value, path)?),
        Type::U8 => Val::U8(integer(value, path)?),
        Type::S16 => Val::S16(integer(value, path)?),
        Type::U16 => Val::U16(integer(value, path)?),
        Type::S32 => Val::S32(integer(value, path)?),
        Type::U32 => Val::U32(integer(value, path)?),
        Type::S64 => Val::S64(integer(value, path)?),
        Type::U64 => Val::U64(integer(value, path)?),
        Type::Float32 => {
            let wide = float(value, path)?;
            // A finite number past f32's range would become infinity.
            if wide.is_finite() && wide.abs() > f64::from(f32::MAX) {
                return Err(wrong(format!("is beyond a 32-bit float's range (±{})", f32::MAX)));
            }
            Val::Float32(wide as f32)
        }
        Type::Float64 => Val::Float64(float(value, path)?),
        Type::Char => {
            let text = value.as_str().ok_or_else(|| expected("a string of one character"))?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(expected("a string of exactly one character (one Unicode scalar value)")),
            }
        }
        Type::String => Val::String(value.as_str().ok_or_else(|| expected("a string"))?.to_string()),
        Type::List(list) if is_bytes(&list.ty()) => {
            let text = value.as_str().ok_or_else(|| expected("a base64 string (bytes)"))?;
            let bytes = BASE64.decode(text).map_err(|err| wrong(format!("is not valid base64: {err}")))?;
            let element =
                |byte: u8| if matches!(list.ty(), Type::U8) { Val::U8(byte) } else { Val::S8(byte as i8) };
            Val::List(bytes.into_iter().map(element).collect())
        }
        Type::List(list) => {
            let items = value.as_array().ok_or_else(|| expected("an array"))?;
            let element = list.ty();
            let items =
                items.iter().enumerate().map(|(i, item)| from_json(&element, item, &format!("{path}/{i}")));
            Val::List(items.collect::<Result<_, _>>()?)
        }
        Type::Record(record) => {
            let object = value.as_object().ok_or_else(|| expected("an object"))?;
            let mut fields = Vec::with_capacity(record.fields().len());
            for field in record.fields() {
                let field_path = format!("{path}/{}", escape_pointer(field.name));
                let val = match object.get(field.name) {
                    Some(item) => from_json(&field.ty, item, &field_path)?,
                    None if matches!(field.ty, Type::Option(_)) => Val::Option(None),
                    None => return Err(ArgumentError { path: field_path, why: "is required".into() }),
                };
                fields.push((field.name.to_string(), val));
            }
            if let Some(key) =
                object.keys().find(|key| !record.fields().any(|field| field.name == key.as_str()))
            {
                let why = "is not a field of this record".to_string();
                return Err(ArgumentError { path: format!("{path}/{}", escape_pointer(key)), why });
            }
            Val::Record(fields)
        }
        Type::Tuple(tuple) => {
            let items = value.as_array().ok_or_else(|| expected("an array"))?;
            if items.len() != tuple.types().len() {
                return Err(expected(&format!("an array of exactly {} items", tuple.types().len())));
            }
            let items = tuple
                .types()
                .zip(items)
                .enumerate()
                .map(|(i, (ty, item))| from_json(&ty, item, &format!("{path}/{i}")));
            Val::Tuple(items.collect::<Result<_, _>>()?)
        }
        Type::Variant(variant) => {
            let object =
                value.as_object().ok_or_else(|| expected(r#"an object {"tag": case, "value": payload}"#))?;
            let tag = object
                .get("tag")
                .and_then(Value::as_str)
                .ok_or_else(|| expected("an object with a string \"tag\""))?;
            let case = variant.cases().find(|case| case.name == tag).ok_or_else(|| {
                let cases: Vec<_> = variant.cases().map(|case| case.name.to_string()).collect();
                wrong(format!(
                    "has tag `{}`, which is none of {}",
                    crate::log_text::escaped(tag),
                    cases.join(", ")
                ))
            })?;
            let payload = match (&case.ty, object.get("value")) {
                (Some(ty), Some(item)) => Some(Box::new(from_json(ty, item, &format!("{path}/value"))?)),
                (Some(Type::Option(_)), None) => Some(Box::new(Val::Option(None))),
                (Some(_), None) => {
                    return Err(expected(&format!("an object with a \"value\" for case `{tag}`")));
                }
                (None, None | Some(Value::Null)) => None,
                (None, Some(_)) => return Err(wrong(format!("case `{tag}` has no value"))),
            };
            if object.len() > 1 + usize::from(object.contains_key("value")) {
                return Err(expected(r#"an object with only "tag" and "value""#));
            }
            Val::Variant(tag.to_string(), payload)
        }
        Type::Enum(names) => {
            let name = value.as_str().ok_or_else(|| expected("a string"))?;
            if !names.names().any(|known| known == name) {
                let known: Vec<_> = names.names().collect();
                return Err(expected(&format!("one of {}", known.join(", "))));
            }
            Val::Enum(name.to_string())
        }
        Type::Flags(flags) => {
            let items = value.as_array().ok_or_else(|| expected("an array of flag names"))?;
            let mut set = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let name = item.as_str().filter(|name| flags.names().any(|known| known == *name));
                let Some(name) = name else {
                    let known: Vec<_> = flags.names().collect();
                    let why = format!("must be one of {}", known.join(", "));
                    return Err(ArgumentError { path: format!("{path}/{i}"), why });
                };
                if set.iter().any(|seen: &String| seen == name) {
                    return Err(ArgumentError { path: format!("{path}/{i}"), why: "is named twice".into() });
                }
                set.push(name.to_string());
            }
            Val::Flags(set)
        }
        Type::Option(option) => {
            let inner = option.ty();
            match value {
                Value::Null => Val::Option(None),
                _ if matches!(inner, Type::Option(_)) => {
                    let some = value
                        .as_object()
                        .filter(|object| object.len() == 1)
                        .and_then(|object| object.get("some"))
                        .ok_or_else(|| expected(r#"null or {"some": value} (an option of an option)"#))?;
                    Val::Option(Some(Box::new(from_json(&inner, some, &format!("{path}/some"))?)))
                }
                _ => Val::Option(Some(Box::new(from_json(&inner, value, path)?))),
            }
        }
        Type::Result(result) => {
            let object = value.as_object().filter(|object| object.len() == 1);
            let (key, item) = object
                .and_then(|object| object.iter().next())
                .ok_or_else(|| expected(r#"{"ok": value} or {"err": value}"#))?;
            let (ty, ok) = match key.as_str() {
                "ok" => (result.ok(), true),
                "err" => (result.err(), false),
                _ => return Err(expected(r#"{"ok": value} or {"err": value}"#)),
            };
            let payload = match ty {
                Some(ty) => Some(Box::new(from_json(&ty, item, &format!("{path}/{key}"))?)),
                None if item.is_null() => None,
                None => return Err(wrong(format!("`{key}` carries no value here: use null"))),
            };
            Val::Result(if ok { Ok(payload) } else { Err(payload) })
        }
        // Left out when tools are derived (`super::exports`): never called.
        other => return Err(wrong(format!("has a type no JSON can stand for ({other:?})"))),
    })
}

/// Whether a list of `ty` is written as base64.
pub fn is_bytes(ty: &Type) -> bool {
    matches!(ty, Type::U8)
}

/// An integer of type `T`, from a JSON integer or a decimal string (how
/// 64-bit values travel without losing precision), checked against `T`'s
/// exact range.
fn integer<T: TryFrom<i128> + Bounded>(value: &Value, path: &str) -> Result<T, ArgumentError> {
    let wide: Option<i128> = match value {
        Value::Number(number) => number
            .as_i64()
            .map(i128::from)
            .or_else(|| number.as_u64().map(i128::from))
            .or_else(|| number.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e38).map(|f| f as i128)),
        Value::String(text) if is_decimal(text) => text.parse::<i128>().ok(),
        _ => None,
    };
    let wrong = |why: String| ArgumentError { path: path.to_string(), why };
    let wide = wide.ok_or_else(|| wrong("must be an integer (or a decimal string)".into()))?;
    T::try_from(wide).map_err(|_| wrong(format!("must be between {} and {}", T::MIN, T::MAX)))
}

/// `-?[0-9]+` of at most 40 characters (longer cannot fit any WIT integer).
fn is_decimal(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.len() <= 40 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The range of an integer type, for error messages.
trait Bounded {
    const MIN: i128;
    const MAX: i128;
}

macro_rules! bounded {
    ($($t:ty),*) => {$(impl Bounded for $t {
        const MIN: i128 = <$t>::MIN as i128;
        const MAX: i128 = <$t>::MAX as i128;
    })*};
}
bounded!(i8, u8, i16, u16, i32, u32, i64, u64);

/// A float from a JSON number or one of `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn float(value: &Value, path: &str) -> Result<f64, ArgumentError> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) if text == NAN => Some(f64::NAN),
        Value::String(text) if text == INFINITY => Some(f64::INFINITY),
        Value::String(text) if text == NEG_INFINITY => Some(f64::NEG_INFINITY),
        _ => None,
    }
    .ok_or_else(|| ArgumentError {
        path: path.to_string(),
        why: format!("must be a number (or \"{NAN}\", \"{INFINITY}\", \"{NEG_INFINITY}\")"),
    })
}

/// A component value of type `ty` as JSON, by the rules [`from_json`]
/// reads, within `budget` bytes (roughly what its JSON text takes).
pub fn to_json(ty: &Type, val: &Val, budget: &mut usize) -> Result<Value, TooLarge> {
    spend(budget, 8)?;
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
            spend(budget, items.len() * 4 / 3)?;
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
                spend(budget, name.len())?;
                object.insert(name.clone(), to_json(&field.ty, item, budget)?);
            }
            Value::Object(object)
        }
        (Type::Variant(variant), Val::Variant(tag, payload)) => {
            let mut object = Map::new();
            object.insert("tag".into(), Value::String(tag.clone()));
            let case = variant.cases().find(|case| case.name == tag.as_str()).and_then(|case| case.ty);
            if let (Some(payload), Some(ty)) = (payload, case) {
                object.insert("value".into(), to_json(&ty, payload, budget)?);
            }
            Value::Object(object)
        }
        (_, Val::Enum(name)) => Value::String(name.clone()),
        (_, Val::Flags(names)) => {
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

/// Takes `bytes` from what is left of a result's budget.
fn spend(budget: &mut usize, bytes: usize) -> Result<(), TooLarge> {
    match budget.checked_sub(bytes) {
        Some(left) => {
            *budget = left;
            Ok(())
        }
        None => Err(TooLarge),
    }
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

/// `name` as one JSON Pointer token (RFC 6901).
fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
