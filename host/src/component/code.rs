//! A loaded component's code, by kind: a component written for the
//! `mcp:tool` contract, or a plain one whose exported functions are its
//! tools (`crate::plain`). Everything else about a component — grants,
//! limits, approval, the way a call is run and stopped — is the same for
//! both.

use std::sync::Arc;

use wasmtime::Engine;

use crate::contract::ToolComponentPre;
use crate::plain::PlainCode;
use crate::store::CallState;

/// A component's instance-to-be, imports resolved once.
#[derive(Clone)]
pub enum Code {
    /// It exports `mcp:tool/tool`.
    Contract(ToolComponentPre<CallState>),
    /// It exports plain functions.
    Plain(Arc<PlainCode>),
}

/// Which kind of component it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Written for the `mcp:tool` contract: its tools are cancelled
    /// cooperatively first, and cleaned up after a stop.
    Contract,
    /// Plain functions: no `cancelled` to watch and no `cleanup`, so a
    /// stop is forced at once.
    Plain,
}

impl Kind {
    /// How `inspect` and the logs name it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Contract => "mcp:tool",
            Kind::Plain => "plain",
        }
    }
}

impl Code {
    /// The engine its code was compiled for (baseline or optimized).
    pub fn engine(&self) -> &Engine {
        match self {
            Code::Contract(pre) => pre.engine(),
            Code::Plain(plain) => plain.pre.engine(),
        }
    }

    /// Which kind of component it is.
    pub fn kind(&self) -> Kind {
        match self {
            Code::Contract(_) => Kind::Contract,
            Code::Plain(_) => Kind::Plain,
        }
    }
}
