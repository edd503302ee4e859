//! What a client declared it can be asked, kept per call in place of its
//! whole capabilities; and what a call asked for that it had not declared.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rmcp::model::{
    ClientCapabilities, ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
};

/// What a client declared it can be asked: elicitation by form or by URL,
/// sampling, and its roots.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ClientAsks {
    pub(super) form: bool,
    pub(super) url: bool,
    pub(super) sampling: bool,
    pub(super) roots: bool,
}

impl From<Option<&ClientCapabilities>> for ClientAsks {
    fn from(capabilities: Option<&ClientCapabilities>) -> Self {
        let Some(capabilities) = capabilities else { return ClientAsks::default() };
        let sampling = capabilities.sampling.is_some();
        let roots = capabilities.roots.is_some();
        let Some(elicitation) = &capabilities.elicitation else {
            return ClientAsks { sampling, roots, ..ClientAsks::default() };
        };
        // A client that names neither mode supports forms (2025-06-18 style).
        let neither = elicitation.form.is_none() && elicitation.url.is_none();
        ClientAsks {
            form: neither || elicitation.form.is_some(),
            url: elicitation.url.is_some(),
            sampling,
            roots,
        }
    }
}

/// A kind of question a client may not have declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Elicitation by form.
    Form,
    /// Elicitation by URL.
    Url,
    /// Sampling.
    Sampling,
    /// `roots/list`.
    Roots,
}

impl Capability {
    fn bit(self) -> u8 {
        match self {
            Capability::Form => 1,
            Capability::Url => 2,
            Capability::Sampling => 4,
            Capability::Roots => 8,
        }
    }
}

/// The capabilities a call asked for and the client had not declared,
/// shared between the call's channel (which notes them) and the request
/// that answers for the call. On protocol 2026-07-28 a call that then ends
/// in an error is answered with MCP's "missing required client capability"
/// (-32021) naming them, as SEP-2575 asks of a server that needs one.
#[derive(Clone, Debug, Default)]
pub struct MissingCapabilities(Arc<AtomicU8>);

impl MissingCapabilities {
    /// Notes that the call asked for `capability`.
    pub(super) fn note(&self, capability: Capability) {
        self.0.fetch_or(capability.bit(), Ordering::Relaxed);
    }

    /// The capabilities noted, as MCP's `ClientCapabilities` object (what
    /// `requiredCapabilities` carries), or `None` if there are none.
    pub fn required(&self) -> Option<ClientCapabilities> {
        let bits = self.0.load(Ordering::Relaxed);
        if bits == 0 {
            return None;
        }
        let has = |capability: Capability| bits & capability.bit() != 0;
        let mut required = ClientCapabilities::default();
        if has(Capability::Sampling) {
            required.sampling = Some(Default::default());
        }
        if has(Capability::Roots) {
            required.roots = Some(Default::default());
        }
        if has(Capability::Form) || has(Capability::Url) {
            let mut elicitation = ElicitationCapability::default();
            elicitation.form = has(Capability::Form).then(FormElicitationCapability::default);
            elicitation.url = has(Capability::Url).then(UrlElicitationCapability::default);
            required.elicitation = Some(elicitation);
        }
        Some(required)
    }
}
