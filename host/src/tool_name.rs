//! The names tools go by: MCP's rules for them, shared by components of
//! both kinds (`crate::component`, `crate::plain`) and by the `prefix` a
//! component's tools may be given.

/// Most tools one component may offer.
pub const MAX_TOOLS: usize = 1024;

/// MCP's recommended tool-name alphabet (2025-11-25, "Tool names"):
/// 1-128 characters of `A-Z a-z 0-9 _ - .`.
pub fn is_valid(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_mcp_alphabet() {
        assert!(is_valid("echo"));
        assert!(is_valid("files.read_v2-beta"));
        assert!(!is_valid(""));
        assert!(!is_valid("has space"));
        assert!(!is_valid(&"x".repeat(129)));
    }
}
