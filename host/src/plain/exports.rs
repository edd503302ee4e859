//! Which exports of a plain component are tools, and their names.
//!
//! Every freestanding function is a tool: `func` for one exported at world
//! level, `interface.func` for one of an exported interface (the
//! interface's own name, without its package and version). Resource
//! methods, constructors and static functions belong to handles JSON
//! cannot hold; `async` functions need the component model's async ABI;
//! `wasi:` interfaces (`wasi:cli/run`, `wasi:http/incoming-handler`) are
//! entry points for other hosts, and componentize-py adds an `exports`
//! instance of one `init` function, its own pre-initialisation hook. None
//! of those are tools.

use wit_parser::{Function, FunctionKind, Resolve, WorldId, WorldItem, WorldKey};

/// A function that may become a tool.
pub struct Candidate<'a> {
    /// The tool's name.
    pub tool: String,
    /// The exported interface it is in, by its export name
    /// (`example:pkg/iface@1.0.0`), or `None` at world level.
    pub interface: Option<String>,
    /// The function.
    pub function: &'a Function,
}

/// A function that is not a tool, and why (logged at load).
#[derive(Debug, Clone)]
pub struct LeftOut {
    /// The function as a WIT reader would name it (`iface#func`).
    pub function: String,
    /// Why it is left out.
    pub why: String,
}

/// The functions `world` exports, as tool candidates and those left out.
pub fn candidates(resolve: &Resolve, world: WorldId) -> (Vec<Candidate<'_>>, Vec<LeftOut>) {
    let mut candidates = Vec::new();
    let mut left_out = Vec::new();
    for (key, item) in &resolve.worlds[world].exports {
        match item {
            WorldItem::Function(function) => {
                consider(function, None, &function.name, &mut candidates, &mut left_out);
            }
            WorldItem::Interface { id, .. } => {
                let export = resolve.name_world_key(key);
                let interface = &resolve.interfaces[*id];
                let short = match key {
                    WorldKey::Name(name) => name.clone(),
                    WorldKey::Interface(_) => interface.name.clone().unwrap_or_else(|| export.clone()),
                };
                let toolkit_hook = matches!(key, WorldKey::Name(name) if name == "exports")
                    && interface.functions.keys().eq(["init"]);
                if toolkit_hook {
                    left_out.push(LeftOut {
                        function: format!("{export}#init"),
                        why: "componentize-py's own initialisation hook, not a tool".into(),
                    });
                    continue;
                }
                if export.starts_with("wasi:") {
                    left_out.push(LeftOut {
                        function: export.clone(),
                        why: "a WASI interface is an entry point for other hosts, not a tool".into(),
                    });
                    continue;
                }
                for function in interface.functions.values() {
                    let tool = format!("{short}.{}", function.name);
                    consider(function, Some(&export), &tool, &mut candidates, &mut left_out);
                }
            }
            WorldItem::Type { .. } => {}
        }
    }
    (candidates, left_out)
}

fn consider<'a>(
    function: &'a Function,
    interface: Option<&str>,
    tool: &str,
    candidates: &mut Vec<Candidate<'a>>,
    left_out: &mut Vec<LeftOut>,
) {
    let path = match interface {
        Some(interface) => format!("{interface}#{}", function.name),
        None => function.name.clone(),
    };
    let why = match function.kind {
        FunctionKind::Freestanding => None,
        // A resource's own functions: part of the handle, silently.
        FunctionKind::Method(_) | FunctionKind::Static(_) | FunctionKind::Constructor(_) => return,
        FunctionKind::AsyncFreestanding | FunctionKind::AsyncMethod(_) | FunctionKind::AsyncStatic(_) => {
            Some("it is an `async` function, which the host does not call".to_string())
        }
    };
    let why = why.or_else(|| {
        (!crate::tool_name::is_valid(tool)).then(|| {
            format!("its tool name `{tool}` breaks the MCP tool-name rules (1-128 of A-Z a-z 0-9 _ - .)")
        })
    });
    match why {
        Some(why) => left_out.push(LeftOut { function: path, why }),
        None => candidates.push(Candidate {
            tool: tool.to_string(),
            interface: interface.map(String::from),
            function,
        }),
    }
}
