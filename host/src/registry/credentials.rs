//! Registry credentials: from the environment
//! (`MCP_WASM_HOST_REGISTRY_USERNAME` and `MCP_WASM_HOST_REGISTRY_PASSWORD`),
//! else from the Docker config file (`$DOCKER_CONFIG/config.json` or
//! `~/.docker/config.json`, as `docker login` and `wkg` write it), else
//! anonymous. Credentials are never logged; only where they came from.

use std::path::PathBuf;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

/// The environment variables that name a registry user and password.
pub const USERNAME_VAR: &str = "MCP_WASM_HOST_REGISTRY_USERNAME";
/// See [`USERNAME_VAR`].
pub const PASSWORD_VAR: &str = "MCP_WASM_HOST_REGISTRY_PASSWORD";

/// The Docker config file is a few entries; a larger one is not read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `config.json`: only the `auths` table (credential helpers are not run).
#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::HashMap<String, DockerAuth>,
}

#[derive(Deserialize)]
struct DockerAuth {
    /// base64 of `user:password`.
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// The credentials to present to `registry` (`HOST[:PORT]`).
pub fn for_registry(registry: &str) -> RegistryAuth {
    if let (Ok(user), Ok(password)) = (std::env::var(USERNAME_VAR), std::env::var(PASSWORD_VAR)) {
        tracing::debug!(registry, "registry credentials from the environment");
        return RegistryAuth::Basic(user, password);
    }
    let Some(path) = docker_config_path() else {
        return RegistryAuth::Anonymous;
    };
    match from_docker_config(&path, registry) {
        Some(auth) => {
            tracing::debug!(registry, file = %path.display(), "registry credentials from the Docker config");
            auth
        }
        None => RegistryAuth::Anonymous,
    }
}

fn docker_config_path() -> Option<PathBuf> {
    std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".docker")))
        .map(|dir| dir.join("config.json"))
}

fn from_docker_config(path: &std::path::Path, registry: &str) -> Option<RegistryAuth> {
    // Bounded, regular files only, with no window between the check and the read.
    let text = crate::secret_file::read(path, "the Docker config", MAX_CONFIG_BYTES).ok()?;
    let config: DockerConfig = match serde_json::from_str(&text) {
        Ok(config) => config,
        Err(err) => {
            // The error names a position, never the file's contents.
            tracing::warn!(file = %path.display(), "ignoring an unreadable Docker config: {err}");
            return None;
        }
    };
    // `docker login` keys Docker Hub by its old URL, others by host.
    let mut keys = vec![registry.to_string(), format!("https://{registry}"), format!("http://{registry}")];
    if registry == "index.docker.io" || registry == "docker.io" {
        keys.push("https://index.docker.io/v1/".into());
    }
    let entry = keys.iter().find_map(|key| config.auths.get(key))?;
    if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
        return Some(RegistryAuth::Basic(user.clone(), password.clone()));
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(entry.auth.as_ref()?).ok()?;
    let (user, password) =
        String::from_utf8(decoded).ok()?.split_once(':').map(|(u, p)| (u.into(), p.into()))?;
    Some(RegistryAuth::Basic(user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_login_entries_are_read_by_host() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let auth = base64::engine::general_purpose::STANDARD.encode("me:secret");
        std::fs::write(
            &path,
            format!(r#"{{"auths":{{"ghcr.io":{{"auth":"{auth}"}}}},"credsStore":"desktop"}}"#),
        )
        .unwrap();
        assert_eq!(
            from_docker_config(&path, "ghcr.io"),
            Some(RegistryAuth::Basic("me".into(), "secret".into()))
        );
        assert_eq!(from_docker_config(&path, "quay.io"), None);
    }
}
