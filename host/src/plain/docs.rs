//! Descriptions from a plain component's own WIT docs: the `package-docs`
//! custom section `wit-component` defines (a version byte, then JSON: the
//! docs of the package's worlds and interfaces, their functions, types and
//! the items of those types). Builds that keep docs carry it, and hosts
//! that describe plain components add it beforehand; many builds have none
//! (then the tools have no description).
//!
//! The section describes the *source* package (world `plain-types`), while
//! a component's decoded WIT is a synthetic `root` package: wit-parser
//! would refuse the whole component for the mismatch ("missing world"). So
//! the section is taken out before decoding, and its docs are matched here
//! by name: world-level functions and types against the component's world,
//! interfaces by their own name. The section is guest data: its JSON is
//! read leniently, and every text in it is cut to [`MAX_DOC`].

use std::borrow::Cow;

use anyhow::{Result, bail};
use serde_json::Value;
use wasmparser::{Chunk, Parser, Payload};
use wit_parser::{Docs, Resolve, TypeDefKind, TypeOwner, WorldId, WorldItem};

/// The custom section's name.
const SECTION: &str = "package-docs";

/// Longest doc text kept, in bytes (a tool's description may be 16 KiB;
/// schemas are bounded as a whole).
const MAX_DOC: usize = 2 << 10;

/// `bytes` without their top-level `package-docs` section, and that
/// section's docs (`None` when there is none, or it is not JSON).
pub fn split(bytes: &[u8]) -> Result<(Cow<'_, [u8]>, Option<Value>)> {
    // Most components carry none: no copy then.
    if !bytes.windows(SECTION.len()).any(|window| window == SECTION.as_bytes()) {
        return Ok((Cow::Borrowed(bytes), None));
    }
    let mut parser = Parser::new(0);
    let (mut offset, mut kept, mut docs) = (0, Vec::with_capacity(bytes.len()), None);
    loop {
        let Chunk::Parsed { consumed, payload } = parser.parse(&bytes[offset..], true)? else {
            bail!("the component ends early");
        };
        let end = offset + consumed;
        match payload {
            Payload::CustomSection(section) if section.name() == SECTION => {
                // A version byte (0 or 1), then JSON.
                docs = section.data().split_first().and_then(|(_, json)| serde_json::from_slice(json).ok());
            }
            // Nested modules and components are copied whole, unread (the
            // parser has moved past them already).
            Payload::ModuleSection { unchecked_range, .. }
            | Payload::ComponentSection { unchecked_range, .. } => {
                kept.extend_from_slice(&bytes[offset..unchecked_range.end]);
                offset = unchecked_range.end;
                continue;
            }
            Payload::End(_) => {
                kept.extend_from_slice(&bytes[offset..end]);
                break;
            }
            _ => kept.extend_from_slice(&bytes[offset..end]),
        }
        offset = end;
    }
    Ok((Cow::Owned(kept), docs))
}

/// Puts the docs of `metadata` on the functions and types `world` exports.
pub fn apply(metadata: &Value, resolve: &mut Resolve, world: WorldId) {
    let worlds: Vec<&Value> =
        metadata.get("worlds").and_then(Value::as_object).into_iter().flatten().map(|(_, w)| w).collect();
    // World-level functions and the types they use.
    for world_docs in &worlds {
        for key in ["funcs", "func_exports"] {
            for (name, docs) in entries(world_docs, key) {
                let item = resolve.worlds[world].exports.values_mut().find_map(|item| match item {
                    WorldItem::Function(function) if function.name == *name => Some(function),
                    _ => None,
                });
                if let Some(function) = item {
                    set(&mut function.docs, doc_text(docs));
                }
            }
        }
        let types: Vec<_> = resolve
            .types
            .iter()
            .filter(|(_, def)| def.owner == TypeOwner::World(world))
            .filter_map(|(id, def)| Some((id, def.name.clone()?)))
            .collect();
        for (id, name) in types {
            if let Some(docs) = world_docs.get("types").and_then(|types| types.get(&name)) {
                apply_type(docs, resolve, id);
            }
        }
    }
    // Interfaces, by their own name: the package's, or one a world declares.
    let exported: Vec<_> = resolve.worlds[world]
        .exports
        .values()
        .filter_map(|item| match item {
            WorldItem::Interface { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    for id in exported {
        let Some(name) = resolve.interfaces[id].name.clone() else { continue };
        let mut sources: Vec<&Value> =
            metadata.get("interfaces").and_then(|all| all.get(&name)).into_iter().collect();
        for world_docs in &worlds {
            for key in ["interfaces", "interface_exports"] {
                sources.extend(world_docs.get(key).and_then(|all| all.get(&name)));
            }
        }
        for docs in sources {
            set(&mut resolve.interfaces[id].docs, doc_text(docs));
            for (func, docs) in entries(docs, "funcs") {
                if let Some(function) = resolve.interfaces[id].functions.get_mut(func) {
                    set(&mut function.docs, doc_text(docs));
                }
            }
            for (ty, docs) in entries(docs, "types") {
                if let Some(&type_id) = resolve.interfaces[id].types.get(ty) {
                    apply_type(docs, resolve, type_id);
                }
            }
        }
    }
}

/// A type's docs and those of its items (fields, cases, flags).
fn apply_type(docs: &Value, resolve: &mut Resolve, id: wit_parser::TypeId) {
    let def = &mut resolve.types[id];
    set(&mut def.docs, doc_text(docs));
    for (item, text) in entries(docs, "items") {
        let text = text.as_str();
        let target = match &mut def.kind {
            TypeDefKind::Record(record) => {
                record.fields.iter_mut().find(|f| f.name == *item).map(|f| &mut f.docs)
            }
            TypeDefKind::Variant(variant) => {
                variant.cases.iter_mut().find(|c| c.name == *item).map(|c| &mut c.docs)
            }
            TypeDefKind::Enum(enumeration) => {
                enumeration.cases.iter_mut().find(|c| c.name == *item).map(|c| &mut c.docs)
            }
            TypeDefKind::Flags(flags) => {
                flags.flags.iter_mut().find(|f| f.name == *item).map(|f| &mut f.docs)
            }
            _ => None,
        };
        if let Some(target) = target {
            set(target, text);
        }
    }
}

/// The entries of the object at `key`, if it is one.
fn entries<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    value.get(key).and_then(Value::as_object).into_iter().flatten()
}

/// An item's docs: a string, or an object with `docs`.
fn doc_text(value: &Value) -> Option<&str> {
    value.as_str().or_else(|| value.get("docs").and_then(Value::as_str))
}

fn set(docs: &mut Docs, text: Option<&str>) {
    if let Some(text) = text.map(str::trim).filter(|text| !text.is_empty()) {
        let mut end = text.len().min(MAX_DOC);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        docs.contents = Some(text[..end].to_string());
    }
}
