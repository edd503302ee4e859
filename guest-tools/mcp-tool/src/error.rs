//! Why a call failed: the WIT `call-error` cases, with the conversions that
//! let a tool use `?` on the errors it meets.

use crate::RequestError;
use crate::raw::mcp::tool::types::CallError;

/// `Result<T, mcp_tool::Error>`: what [`Tool::call`](crate::Tool::call) returns.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a call produced no result; each case is the WIT `call-error` of the
/// same name. The host shows the message to the model as an `isError`
/// result (a JSON-RPC error for `UnknownTool`).
///
/// `?` converts I/O errors, JSON errors, a declined approval and strings
/// into [`Error::Failed`], and a [`RequestError`] into the case it means:
/// `Cancelled` stays `Cancelled`, the others become `Failed` with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The component has no tool by that name.
    UnknownTool(String),
    /// The arguments passed the schema but make no sense to the tool.
    InvalidArguments(String),
    /// The tool failed; the message says why.
    Failed(String),
    /// The tool stopped early because the call was cancelled.
    Cancelled,
    /// A resource read found nothing at the URI (the client gets MCP's
    /// "resource not found"); for a tool, a failure saying so.
    NotFound,
}

impl Error {
    /// [`Error::Failed`] with `message`.
    pub fn failed(message: impl std::fmt::Display) -> Self {
        Error::Failed(message.to_string())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::UnknownTool(name) => write!(f, "no tool named `{name}`"),
            Error::InvalidArguments(why) => write!(f, "invalid arguments: {why}"),
            Error::Failed(why) => f.write_str(why),
            Error::Cancelled => f.write_str("cancelled"),
            Error::NotFound => f.write_str("not found"),
        }
    }
}

impl std::error::Error for Error {}

impl From<RequestError> for Error {
    fn from(error: RequestError) -> Self {
        match error {
            RequestError::Cancelled => Error::Cancelled,
            RequestError::Unsupported => Error::Failed("the client does not support this request".into()),
            RequestError::TimedOut => Error::Failed("the client did not answer in time".into()),
            RequestError::Failed(why) => Error::Failed(why),
        }
    }
}

impl From<crate::Declined> for Error {
    fn from(declined: crate::Declined) -> Self {
        Error::Failed(declined.0)
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Error::Failed(error.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(error: serde_json::Error) -> Self {
        Error::Failed(error.to_string())
    }
}

impl From<String> for Error {
    fn from(message: String) -> Self {
        Error::Failed(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Self {
        Error::Failed(message.to_string())
    }
}

impl From<Error> for CallError {
    fn from(error: Error) -> Self {
        match error {
            Error::UnknownTool(name) => CallError::UnknownTool(name),
            Error::InvalidArguments(why) => CallError::InvalidArguments(why),
            Error::Failed(why) => CallError::Failed(why),
            Error::Cancelled => CallError::Cancelled,
            Error::NotFound => CallError::Failed("not found".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_request_becomes_the_call_error_it_means() {
        assert_eq!(Error::from(RequestError::Cancelled), Error::Cancelled);
        assert!(
            matches!(Error::from(RequestError::Unsupported), Error::Failed(m) if m.contains("not support"))
        );
        assert_eq!(Error::from(RequestError::Failed("no".into())), Error::Failed("no".into()));
        assert_eq!(Error::from(crate::Declined("the user declined".into())).to_string(), "the user declined");
        assert!(matches!(CallError::from(Error::Cancelled), CallError::Cancelled));
        assert!(matches!(CallError::from(Error::from("bad")), CallError::Failed(m) if m == "bad"));
    }
}
