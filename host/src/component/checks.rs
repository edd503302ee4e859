//! The checks a component passes before anything of it runs: that the file
//! is a component at all, and that it was built against a version of the
//! `mcp:tool` contract this host serves.

use wasmtime::Engine;
use wasmtime::component::Component;

use super::LoadError;
use crate::contract::CONTRACT_VERSION;

/// Refuses a component whose `mcp:tool` imports or exports name a version
/// this host cannot serve, read from the component's own type. Within
/// 0.2, patch versions only add: a tool built against 0.2.x with x above
/// the host's may use what the host lacks.
pub(super) fn check_contract_version(component: &Component, engine: &Engine) -> Result<(), LoadError> {
    let ty = component.component_type();
    let names = ty.imports(engine).map(|(name, _)| name).chain(ty.exports(engine).map(|(name, _)| name));
    for name in names {
        let Some(version) =
            name.strip_prefix("mcp:tool/").and_then(|rest| rest.split_once('@')).map(|(_, v)| v)
        else {
            continue;
        };
        if !serves_version(version) {
            return Err(LoadError::ContractVersion { found: name.to_string() });
        }
    }
    Ok(())
}

/// Whether a tool built against contract `version` runs on this host: the
/// same major and minor (0.x: minor is breaking), a patch no newer.
fn serves_version(version: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let mut parts = v.split('.').map(|part| part.parse::<u64>().ok());
        Some((parts.next()??, parts.next()??, parts.next()??))
    };
    match (parse(version), parse(CONTRACT_VERSION)) {
        (Some((major, minor, patch)), Some((ours_major, ours_minor, ours_patch))) => {
            major == ours_major && minor == ours_minor && patch <= ours_patch
        }
        _ => false,
    }
}

/// Tells a core module, a component and a non-wasm file apart, so the error
/// says what the user actually has.
pub(super) fn check_is_component(bytes: &[u8]) -> Result<(), LoadError> {
    const MAGIC: &[u8] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err(LoadError::NotAComponent("not a WebAssembly file"));
    }
    // Bytes 4..8: version (2 bytes) and layer (2 bytes); layer 1 = component.
    if bytes[6..8] != [1, 0] {
        return Err(LoadError::NotAComponent(
            "it is a core WebAssembly module, not a component; build tools with \
             `cargo component build` or `cargo build --target wasm32-wasip2`",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_modules_and_other_files_are_told_apart() {
        let core = b"\0asm\x01\0\0\0";
        let component = b"\0asm\x0d\0\x01\0";
        assert!(check_is_component(component).is_ok());
        let err = check_is_component(core).unwrap_err().to_string();
        assert!(err.contains("core WebAssembly module"), "{err}");
        let err = check_is_component(b"#!/bin/sh\n").unwrap_err().to_string();
        assert!(err.contains("not a WebAssembly file"), "{err}");
    }

    #[test]
    fn only_the_same_minor_and_no_newer_patch_of_the_contract_is_served() {
        assert!(serves_version(CONTRACT_VERSION));
        assert!(!serves_version("0.1.0"), "0.x minors break");
        assert!(!serves_version("0.3.0"));
        assert!(!serves_version("1.2.0"));
        assert!(!serves_version("0.2.99"), "a newer patch may use what this host lacks");
        assert!(!serves_version("0.2"));
        assert!(!serves_version("garbage"));
    }

    /// The check reads the component's own type: a component importing
    /// `mcp:tool/client` at another version is refused by name, before any
    /// linking.
    #[test]
    fn a_component_built_against_another_contract_is_refused_by_its_type() {
        let engine = Engine::default();
        let wat = r#"(component
            (import "mcp:tool/client@0.1.0" (instance))
            (import "wasi:cli/environment@0.2.6" (instance)))"#;
        let component = Component::new(&engine, wat::parse_str(wat).unwrap()).unwrap();
        let err = check_contract_version(&component, &engine).unwrap_err();
        assert!(
            matches!(&err, LoadError::ContractVersion { found } if found == "mcp:tool/client@0.1.0"),
            "{err}"
        );
        assert!(err.to_string().contains("mcp-wasm-host wit DIR"), "{err}");
        let current = format!(r#"(component (import "mcp:tool/client@{CONTRACT_VERSION}" (instance)))"#);
        let component = Component::new(&engine, wat::parse_str(&current).unwrap()).unwrap();
        assert!(check_contract_version(&component, &engine).is_ok());
    }
}
