//! JSON arguments to component values, for plain components (the rules
//! are in [`super`]'s docs; [`super::schema`] writes the same rules as JSON
//! Schema, and [`super::result_json`] writes results by them).
//!
//! Arguments were checked against the tool's schema already, but the
//! schema cannot say everything (a 64-bit integer written as a string,
//! base64, one `char`), so every conversion here checks again and names
//! the argument that is wrong.

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
    let wrong = |why: String| ArgumentError { path: path.to_string(), why };
    // serde_json reads an integer literal within 64 bits exactly; any other
    // number (out of range, or written with a fraction or an exponent) as a
    // double, which past 2^53 stands for many integers: it cannot say which
    // one the client meant, so it is refused rather than rounded.
    const EXACT: f64 = (1u64 << 53) as f64;
    if let Some(f) = value.as_number().filter(|n| !n.is_i64() && !n.is_u64()).and_then(Number::as_f64)
        && f.fract() == 0.0
        && f.abs() > EXACT
    {
        return Err(wrong(format!(
            "must be between {} and {}, written exactly: past ±2^53 as an integer without a \
             fraction or exponent, or as a decimal string",
            T::MIN,
            T::MAX
        )));
    }
    let wide: Option<i128> = match value {
        Value::Number(number) => {
            number.as_i64().map(i128::from).or_else(|| number.as_u64().map(i128::from)).or_else(|| {
                number.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= EXACT).map(|f| f as i128)
            })
        }
        Value::String(text) if is_decimal(text) => text.parse::<i128>().ok(),
        _ => None,
    };
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

/// `name` as one JSON Pointer token (RFC 6901).
fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
