//! What a call returns ([`Output`]), and small constructors for the WIT
//! records a tool describes itself and its results with.

use schemars::JsonSchema;
use serde::Serialize;

use crate::{Annotations, CallResult, Content, EmbeddedResource, Error, Media, ResourceBody};

/// A type a tool can return from [`Tool::call`](crate::Tool::call).
///
/// - `String` or `&'static str`: one text block;
/// - [`Content`] or `Vec<Content>`: those blocks (text, image, audio,
///   embedded resources, resource links);
/// - [`Structured<T>`]: structured content, whose type's JSON Schema is the
///   tool's output schema;
/// - [`CallResult`]: the WIT record itself, e.g. to return `is_error: true`
///   (a failure the model should see and may recover from).
pub trait Output {
    /// The tool's output schema: `None` for results without structured content.
    fn schema() -> Option<serde_json::Value> {
        None
    }

    /// The result the host gets.
    fn into_result(self) -> Result<CallResult, Error>;
}

impl Output for CallResult {
    fn into_result(self) -> Result<CallResult, Error> {
        Ok(self)
    }
}

impl Output for String {
    fn into_result(self) -> Result<CallResult, Error> {
        Ok(CallResult::text(self))
    }
}

impl Output for &'static str {
    fn into_result(self) -> Result<CallResult, Error> {
        Ok(CallResult::text(self))
    }
}

impl Output for Content {
    fn into_result(self) -> Result<CallResult, Error> {
        Ok(CallResult::content(vec![self]))
    }
}

impl Output for Vec<Content> {
    fn into_result(self) -> Result<CallResult, Error> {
        Ok(CallResult::content(self))
    }
}

/// Structured content: a value for programs to consume, and the content
/// blocks shown beside it. The JSON Schema of `T` (as serialized) is the
/// tool's output schema, and the host checks every result against it.
///
/// Unless [`text`](Structured::text) or [`content`](Structured::content)
/// says otherwise, the content is one text block with the value's JSON, as
/// MCP recommends for clients that do not read structured content.
#[derive(Debug, Clone)]
pub struct Structured<T> {
    value: T,
    content: Option<Vec<Content>>,
}

impl<T> Structured<T> {
    /// `value`, shown as its JSON.
    pub fn new(value: T) -> Self {
        Structured { value, content: None }
    }

    /// Shows `text` instead of the value's JSON.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.content(vec![Content::Text(text.into())])
    }

    /// Shows `content` instead of the value's JSON.
    pub fn content(mut self, content: Vec<Content>) -> Self {
        self.content = Some(content);
        self
    }
}

impl<T: Serialize + JsonSchema> Output for Structured<T> {
    fn schema() -> Option<serde_json::Value> {
        Some(crate::output_schema::<T>())
    }

    fn into_result(self) -> Result<CallResult, Error> {
        let json = serde_json::to_string(&self.value)
            .map_err(|err| Error::Failed(format!("the result does not serialize to JSON: {err}")))?;
        let content = self.content.unwrap_or_else(|| vec![Content::Text(json.clone())]);
        Ok(CallResult { content, structured_content: Some(json), is_error: false })
    }
}

impl CallResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallResult::content(vec![Content::Text(text.into())])
    }

    /// A result of these content blocks.
    pub fn content(content: Vec<Content>) -> Self {
        CallResult { content, structured_content: None, is_error: false }
    }

    /// A failure the model should see and may recover from (`isError:
    /// true`), e.g. "file not found", explained in one text block.
    pub fn error(text: impl Into<String>) -> Self {
        CallResult { is_error: true, ..CallResult::text(text) }
    }
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    /// An image (`mime_type` e.g. `image/png`).
    pub fn image(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Content::Image(Media { data: data.into(), mime_type: mime_type.into() })
    }

    /// An audio clip (`mime_type` e.g. `audio/wav`).
    pub fn audio(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Content::Audio(Media { data: data.into(), mime_type: mime_type.into() })
    }

    /// A text resource embedded with its contents.
    pub fn embedded_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Content::Embedded(EmbeddedResource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
        })
    }
}

impl Annotations {
    /// No hints stated: clients assume MCP's defaults (not read-only,
    /// destructive, not idempotent, open world).
    pub const NONE: Annotations =
        Annotations { read_only: None, destructive: None, idempotent: None, open_world: None };

    /// States whether the tool leaves its environment unchanged.
    pub const fn read_only(self, yes: bool) -> Self {
        Annotations { read_only: Some(yes), ..self }
    }

    /// States whether the tool may perform destructive updates.
    pub const fn destructive(self, yes: bool) -> Self {
        Annotations { destructive: Some(yes), ..self }
    }

    /// States whether calling it twice with the same arguments has no extra effect.
    pub const fn idempotent(self, yes: bool) -> Self {
        Annotations { idempotent: Some(yes), ..self }
    }

    /// States whether the tool talks to an open world of external entities (e.g. the web).
    pub const fn open_world(self, yes: bool) -> Self {
        Annotations { open_world: Some(yes), ..self }
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Serialize;

    use super::*;

    #[derive(Serialize, JsonSchema)]
    struct Said {
        text: String,
    }

    #[test]
    fn structured_content_is_shown_as_its_json_unless_told_otherwise() {
        let said = || Said { text: "hi".into() };
        let result = Structured::new(said()).into_result().unwrap();
        assert_eq!(result.structured_content.as_deref(), Some(r#"{"text":"hi"}"#));
        assert!(matches!(&result.content[..], [Content::Text(t)] if t == r#"{"text":"hi"}"#));

        let result = Structured::new(said()).text("hi").into_result().unwrap();
        assert!(matches!(&result.content[..], [Content::Text(t)] if t == "hi"));
        assert!(!result.is_error);
        assert!(<Structured<Said> as Output>::schema().is_some());
        assert!(<String as Output>::schema().is_none());
    }

    #[test]
    fn hints_are_built_in_constants() {
        const HINTS: Annotations = Annotations::NONE.read_only(true).open_world(false);
        assert_eq!(
            (HINTS.read_only, HINTS.destructive, HINTS.idempotent, HINTS.open_world),
            (Some(true), None, None, Some(false))
        );
    }
}
