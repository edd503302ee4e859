//! What wasmtime's lifting of a plain function's result costs the host,
//! against what it charges for it.
//!
//! wasmtime lifts a result into `Val`s before the host can look at it,
//! charging the store's hostcall fuel as it goes: the `Val`s' own size,
//! and for each name it clones into a `String` (a set flag, an enum case, a
//! variant's tag, a record's field) the name's length. The `String` itself
//! and the allocator's share are not charged: a flag named `a` is charged
//! one byte and costs the host about fifty, so a `list<flags>` of 100 000
//! elements grew the host by 606 MB under a 32 MiB `--max-memory`. The
//! crate's accounting is its own; what is in our hands is its input (the
//! fuel), so each function is given fuel divided by the worst ratio of cost
//! to charge its result type can reach ([`factor`]), and its worst case
//! fits the call's memory.

use wasmtime::component::Type;

/// What a name cloned into a `String` costs the host besides its bytes:
/// the `String` (24 bytes), the allocator's share (16), and the rounding
/// of its allocation.
fn name_cost(len: usize) -> usize {
    24 + 16 + len.max(1).next_multiple_of(8)
}

/// Host bytes per byte of fuel for a name of `len` bytes.
fn name_ratio(len: usize) -> usize {
    name_cost(len).div_ceil(len.max(1))
}

/// Types deeper than this are charged the worst ratio there is, unvisited.
const MAX_DEPTH: usize = 32;

/// The most host bytes lifting a value of `ty` can cost per byte of
/// hostcall fuel charged for it: 1 for a type with no names in it, up to
/// [`name_ratio`] of its shortest name.
pub fn factor(ty: &Type) -> usize {
    factor_at(ty, 0)
}

fn factor_at(ty: &Type, depth: usize) -> usize {
    if depth > MAX_DEPTH {
        return name_ratio(1);
    }
    let inner = |ty: &Type| factor_at(ty, depth + 1);
    let names = |names: &mut dyn Iterator<Item = &str>| names.map(|name| name_ratio(name.len())).max();
    let found = match ty {
        Type::List(list) => Some(inner(&list.ty())),
        Type::Option(option) => Some(inner(&option.ty())),
        Type::Tuple(tuple) => tuple.types().map(|ty| inner(&ty)).max(),
        Type::Result(result) => result.ok().iter().chain(result.err().iter()).map(inner).max(),
        Type::Record(record) => {
            record.fields().map(|field| name_ratio(field.name.len()).max(inner(&field.ty))).max()
        }
        Type::Variant(variant) => variant
            .cases()
            .map(|case| name_ratio(case.name.len()).max(case.ty.as_ref().map_or(1, inner)))
            .max(),
        Type::Enum(enumeration) => names(&mut enumeration.names()),
        Type::Flags(flags) => names(&mut flags.names()),
        _ => None,
    };
    found.unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_cost_the_most_per_byte_charged() {
        assert_eq!(name_ratio(1), 48);
        assert_eq!(name_ratio(8), 6);
        assert_eq!(name_ratio(100), 2);
    }
}
