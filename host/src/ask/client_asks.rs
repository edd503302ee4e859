//! What a client declared it can be asked, kept per call in place of its
//! whole capabilities.

use rmcp::model::ClientCapabilities;

/// What a client declared it can be asked: elicitation by form or by URL,
/// and sampling.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ClientAsks {
    pub(super) form: bool,
    pub(super) url: bool,
    pub(super) sampling: bool,
}

impl From<Option<&ClientCapabilities>> for ClientAsks {
    fn from(capabilities: Option<&ClientCapabilities>) -> Self {
        let Some(capabilities) = capabilities else { return ClientAsks::default() };
        let sampling = capabilities.sampling.is_some();
        let Some(elicitation) = &capabilities.elicitation else {
            return ClientAsks { sampling, ..ClientAsks::default() };
        };
        // A client that names neither mode supports forms (2025-06-18 style).
        let neither = elicitation.form.is_none() && elicitation.url.is_none();
        ClientAsks { form: neither || elicitation.form.is_some(), url: elicitation.url.is_some(), sampling }
    }
}
