//! `--state-key-file`: a paused call carried by the client, so that any
//! replica holding the same key can continue it (protocol 2026-07-28).
//!
//! Without a key, a call that asks the user is parked in this process and
//! its `requestState` is a lease id that only this process knows. With a
//! key, nothing is parked: the `requestState` is the call's state itself —
//! the answers the user gave so far and the question now open — sealed by
//! rmcp's [`RequestStateCodec`] (HMAC-SHA256, a TTL, a keyring). The
//! follow-up may land on any replica; that replica opens the state and runs
//! the call again, answering the guest's questions from it in order (see
//! [`crate::ask::AnswerBook`]).
//!
//! What makes an answer unable to approve anything but its own call: the
//! seal's associated data binds the state to the tool, a digest of the
//! arguments, the MCP session (if any) and the client — with
//! `--auth-issuer` its principal (the token's issuer and subject, so a
//! refreshed token still continues the call), else its `Authorization`
//! header (if any) — so a state presented with another tool, other
//! arguments or by another client fails verification. It is not stored in
//! the token: a client cannot edit it, only fail with it.
//!
//! The state is signed, not encrypted: it holds the user's answers, which
//! the client sent anyway, and digests. Each replica refuses a state it
//! has already redeemed; across replicas a replayed state re-runs the same
//! approved call of the same client, within its lease, which the seal
//! cannot tell from a retry after a replica died.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The largest sealed state this host issues or opens, in bytes: the
/// answers it carries are bounded by this.
pub const MAX_STATE: usize = 64 * 1024;

/// Redeemed states a replica remembers before it prunes the expired ones.
const REMEMBERED: usize = 4096;

/// The keys that seal and open states, and the states this replica has
/// already redeemed.
pub struct StateKeys {
    codec: RequestStateCodec,
    /// Keys held, for the log.
    key_ids: Vec<String>,
    /// This process, in the states it issues: who paused a call.
    replica: String,
    /// Nonces of redeemed states, until they expire.
    redeemed: Mutex<HashMap<String, Instant>>,
    /// How long a redeemed nonce is remembered: the longest lease.
    longest_lease: Duration,
}

/// A paused call's state, as the client carries it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PausedState {
    /// The replica that paused the call.
    pub origin: String,
    /// Unique per state: what "redeemed" remembers.
    pub nonce: String,
    /// The questions answered so far, in the order the call asked them.
    pub answered: Vec<Answered>,
    /// The question the client is answering now: the first of those the
    /// call asked at once.
    pub pending: Pending,
    /// The others it asked with it (`client.ask`), in order. Apart so a
    /// state of one question reads as it did before there could be more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Pending>,
    /// The W3C `traceparent` of the request that paused the call, so the
    /// follow-up's span joins its trace on whichever replica it lands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl PausedState {
    /// The questions the client is answering now, in the order asked.
    pub fn pending(&self) -> impl Iterator<Item = &Pending> {
        std::iter::once(&self.pending).chain(&self.also)
    }

    /// Those questions, taken.
    pub fn into_pending(self) -> impl Iterator<Item = Pending> {
        std::iter::once(self.pending).chain(self.also)
    }
}

/// One question the user answered.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Answered {
    /// The question's [`digest`].
    pub question: String,
    /// The client's answer (an elicitation or sampling result).
    pub answer: Value,
}

/// The open question of a paused call.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Pending {
    /// The question's [`digest`].
    pub question: String,
    /// The key its answer comes under in `inputResponses`.
    pub key: String,
}

/// What a state is bound to: the call it belongs to and who made it.
pub struct Binding {
    tool: String,
    arguments: String,
    session: String,
    principal: String,
}

impl Binding {
    /// The binding of a call of `tool` with `arguments`, made in `session`
    /// by `client` (who the caller is: its principal with `--auth-issuer`,
    /// else its `Authorization` header), either absent.
    pub fn new(tool: &str, arguments: &Value, session: Option<&str>, client: Option<&[u8]>) -> Self {
        Binding {
            tool: tool.to_owned(),
            arguments: digest(arguments),
            session: session.unwrap_or_default().to_owned(),
            principal: client.map(hex_sha256).unwrap_or_default(),
        }
    }

    fn associated_data(&self) -> Vec<u8> {
        // Newline-separated: none of the parts can hold a newline (a tool
        // name is checked at load, the rest are hex or header values).
        let Binding { tool, arguments, session, principal } = self;
        format!("mcp-wasm-host/tools-call/v1\n{tool}\n{arguments}\n{session}\n{principal}").into_bytes()
    }
}

/// Why a state cannot be sealed or opened. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The HMAC does not match its binding.
    #[error(
        "requestState failed verification: it was altered, or it belongs to another tool, other \
         arguments or another client; an answer only continues the call it was asked for"
    )]
    Forged,
    /// Past its lease.
    #[error(
        "requestState has expired: no answer came within the question's lease (--approval-timeout); \
         call the tool again"
    )]
    Expired,
    /// Sealed with a key this host does not hold.
    #[error(
        "requestState was sealed with a key this host does not hold (--state-key-file): another \
         deployment's, or a retired key"
    )]
    UnknownKey,
    /// Not a sealed state at all, or too large.
    #[error("requestState is not one this host issued")]
    Malformed,
    /// This replica has continued the call from this state already.
    #[error("requestState was used already: its call was continued; call the tool again")]
    Redeemed,
    /// The answers so far do not fit in a state.
    #[error("the answers so far are {0} bytes, more than a requestState may carry ({MAX_STATE})")]
    TooLarge(usize),
}

impl StateKeys {
    /// Reads the key file: one secret per line (at least 32 bytes; blank
    /// lines and `#` comments skipped). The first seals; all open, so a key
    /// is rotated by putting the new one first and removing the old one
    /// once the longest lease has passed. `longest_lease` is how long a
    /// redeemed state is remembered.
    pub fn load(path: &Path, longest_lease: Duration) -> Result<Self> {
        // Read as the other secret files are: bounded, regular files only.
        let text = crate::secret_file::read(path, "--state-key-file", crate::secret_file::MAX_SECRETS_FILE)?;
        warn_if_readable_by_others(path);
        let mut keys: Vec<(String, Vec<u8>)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let secret = line.trim();
            if secret.is_empty() || secret.starts_with('#') {
                continue;
            }
            if secret.len() < RequestStateCodec::MIN_KEY_LENGTH {
                bail!(
                    "{} line {}: a state key must be at least {} bytes; make one with \
                     `openssl rand -base64 48`",
                    path.display(),
                    number + 1,
                    RequestStateCodec::MIN_KEY_LENGTH
                );
            }
            // The key id is public (it travels in every state): derived
            // from the secret, so every replica names a key alike.
            let id = hex_sha256(format!("mcp-wasm-host/state-key-id\n{secret}").as_bytes())[..16].to_owned();
            if keys.iter().any(|(known, _)| *known == id) {
                bail!("{} line {}: this key is listed twice", path.display(), number + 1);
            }
            keys.push((id, secret.as_bytes().to_vec()));
        }
        let Some((active, _)) = keys.first() else {
            bail!("{} holds no state key (one secret per line)", path.display());
        };
        let active = active.clone();
        let key_ids = keys.iter().map(|(id, _)| id.clone()).collect();
        let codec = RequestStateCodec::new_with_keyring(active, keys)
            .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
        let replica = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        Ok(StateKeys { codec, key_ids, replica, redeemed: Mutex::default(), longest_lease })
    }

    /// The ids of the keys held, the sealing one first (for the log).
    pub fn key_ids(&self) -> &[String] {
        &self.key_ids
    }

    /// This replica's id, as it appears in the states it issues.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// A new state for a call paused at `pending` (one question or more,
    /// asked at once) after `answered`, from this replica.
    pub fn paused(&self, answered: Vec<Answered>, pending: impl IntoIterator<Item = Pending>) -> PausedState {
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let mut pending = pending.into_iter();
        let first = pending.next().unwrap_or(Pending { question: String::new(), key: String::new() });
        PausedState {
            origin: self.replica.clone(),
            nonce,
            answered,
            pending: first,
            also: pending.collect(),
            trace: None,
        }
    }

    /// Seals `state` for `binding`, valid for `lease`.
    pub fn seal(
        &self,
        state: &PausedState,
        binding: &Binding,
        lease: Duration,
    ) -> Result<String, StateError> {
        let data = binding.associated_data();
        let options = SealOptions::new().associated_data(&data).ttl(lease.max(Duration::from_millis(1)));
        let sealed = self.codec.seal_json_with(state, &options).map_err(|_| StateError::Malformed)?;
        if sealed.len() > MAX_STATE {
            return Err(StateError::TooLarge(sealed.len()));
        }
        Ok(sealed)
    }

    /// Opens `sealed` for `binding`, once: a state this replica redeemed
    /// before is refused.
    pub fn redeem(&self, sealed: &str, binding: &Binding) -> Result<PausedState, StateError> {
        if sealed.len() > MAX_STATE {
            return Err(StateError::Malformed);
        }
        let state: PausedState =
            self.codec.open_json_with(sealed, &binding.associated_data()).map_err(|err| match err {
                RequestStateError::IntegrityCheckFailed => StateError::Forged,
                RequestStateError::Expired => StateError::Expired,
                RequestStateError::UnknownKeyId => StateError::UnknownKey,
                _ => StateError::Malformed,
            })?;
        let now = Instant::now();
        let mut redeemed = self.redeemed.lock().unwrap();
        if redeemed.get(&state.nonce).is_some_and(|until| *until > now) {
            return Err(StateError::Redeemed);
        }
        if redeemed.len() >= REMEMBERED {
            redeemed.retain(|_, until| *until > now);
        }
        redeemed.insert(state.nonce.clone(), now + self.longest_lease);
        Ok(state)
    }
}

/// The SHA-256 of a JSON value in canonical form (object keys sorted, no
/// whitespace), hex: equal for equal values however their keys were ordered.
pub fn digest(value: &Value) -> String {
    let mut hasher = Sha256::new();
    canonical(value, &mut |bytes| hasher.update(bytes));
    hex::encode(hasher.finalize())
}

/// Writes `value` in canonical form to `out`.
fn canonical(value: &Value, out: &mut impl FnMut(&[u8])) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out(b"{");
            for (n, (key, value)) in entries.into_iter().enumerate() {
                if n > 0 {
                    out(b",");
                }
                out(Value::String(key.clone()).to_string().as_bytes());
                out(b":");
                canonical(value, out);
            }
            out(b"}");
        }
        Value::Array(items) => {
            out(b"[");
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out(b",");
                }
                canonical(item, out);
            }
            out(b"]");
        }
        scalar => out(scalar.to_string().as_bytes()),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A key file others can read is a key others can forge states with.
fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path = %path.display(),
                "the state key file is readable by other users; whoever reads it can forge answers \
                 (chmod 600, or defaultMode 0400 for a Kubernetes Secret)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys_from(text: &str) -> Result<StateKeys> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys");
        std::fs::write(&path, text).unwrap();
        StateKeys::load(&path, Duration::from_secs(60))
    }

    const KEY_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const KEY_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn a_state(keys: &StateKeys) -> PausedState {
        let answered = vec![Answered { question: "q1".into(), answer: json!({ "action": "accept" }) }];
        keys.paused(answered, [Pending { question: "q2".into(), key: "question-2".into() }])
    }

    #[test]
    fn a_state_opens_for_its_own_call_once_and_for_no_other() {
        let keys = keys_from(&format!("# comment\n\n{KEY_A}\n")).unwrap();
        let binding = Binding::new("prune", &json!({ "a": 1, "b": [1, 2] }), None, None);
        let state = a_state(&keys);
        let sealed = keys.seal(&state, &binding, Duration::from_secs(60)).unwrap();

        // The same arguments in another key order are the same call.
        let same = Binding::new("prune", &json!({ "b": [1, 2], "a": 1 }), None, None);
        assert_eq!(keys.redeem(&sealed, &same).unwrap(), state);
        assert!(matches!(keys.redeem(&sealed, &same), Err(StateError::Redeemed)));

        let sealed = keys.seal(&state, &binding, Duration::from_secs(60)).unwrap();
        for other in [
            Binding::new("delete_records", &json!({ "a": 1, "b": [1, 2] }), None, None),
            Binding::new("prune", &json!({ "a": 2, "b": [1, 2] }), None, None),
            Binding::new("prune", &json!({ "a": 1, "b": [1, 2] }), Some("session"), None),
            Binding::new("prune", &json!({ "a": 1, "b": [1, 2] }), None, Some(b"Bearer x")),
        ] {
            assert!(matches!(keys.redeem(&sealed, &other), Err(StateError::Forged)));
        }
        let mut tampered = sealed.into_bytes();
        let middle = tampered.len() / 2;
        tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(keys.redeem(&tampered, &binding).is_err());
        assert!(matches!(keys.redeem("not a state", &binding), Err(StateError::Malformed)));
    }

    #[test]
    fn a_rotated_ring_opens_old_states_and_a_foreign_key_is_named() {
        let old = keys_from(KEY_A).unwrap();
        let rotated = keys_from(&format!("{KEY_B}\n{KEY_A}\n")).unwrap();
        let foreign = keys_from(KEY_B).unwrap();
        let binding = Binding::new("t", &json!({}), None, None);
        let sealed = old.seal(&a_state(&old), &binding, Duration::from_secs(60)).unwrap();
        assert!(rotated.redeem(&sealed, &binding).is_ok());
        assert!(matches!(foreign.redeem(&sealed, &binding), Err(StateError::UnknownKey)));
    }

    #[test]
    fn an_expired_state_says_so() {
        let keys = keys_from(KEY_A).unwrap();
        let binding = Binding::new("t", &json!({}), None, None);
        let sealed = keys.seal(&a_state(&keys), &binding, Duration::from_millis(1)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(matches!(keys.redeem(&sealed, &binding), Err(StateError::Expired)));
    }

    #[test]
    fn a_bad_key_file_is_refused_with_the_reason() {
        let short = keys_from("short").err().unwrap().to_string();
        assert!(short.contains("at least 32 bytes"), "{short}");
        let twice = keys_from(&format!("{KEY_A}\n{KEY_A}")).err().unwrap().to_string();
        assert!(twice.contains("twice"), "{twice}");
        let empty = keys_from("# nothing\n").err().unwrap().to_string();
        assert!(empty.contains("no state key"), "{empty}");
    }
}
