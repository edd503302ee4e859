//! What introspection said about tokens seen lately, so a client that
//! sends the same opaque token on every request costs the issuer one
//! request a minute, and a flood of bad tokens is answered from memory.
//!
//! Keyed by the SHA-256 of the token, never the token itself: the cache
//! holds nothing a reader of the host's memory could replay. Bounded: at
//! most [`MAX_ENTRIES`] entries, the oldest evicted first.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use sha2::{Digest as _, Sha256};

use super::Principal;

/// The most tokens remembered at once.
pub(super) const MAX_ENTRIES: usize = 10_000;

/// What was decided about one token: its principal, or why it was refused.
pub(super) type Verdict = Result<Principal, &'static str>;

/// The SHA-256 of a token: what the cache is keyed by.
pub(super) type Key = [u8; 32];

/// The key for `token`.
pub(super) fn key(token: &str) -> Key {
    Sha256::digest(token.as_bytes()).into()
}

/// Verdicts by token hash, each until its own deadline.
pub(super) struct TokenCache {
    capacity: usize,
    entries: HashMap<Key, Entry>,
    /// Keys in insertion order, each with the serial of its insertion (an
    /// item whose serial is no longer its entry's is stale and skipped).
    order: VecDeque<(Key, u64)>,
    next_serial: u64,
}

struct Entry {
    verdict: Verdict,
    until: Instant,
    serial: u64,
}

impl TokenCache {
    /// An empty cache of at most `capacity` entries.
    pub(super) fn new(capacity: usize) -> Self {
        TokenCache {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            order: VecDeque::new(),
            next_serial: 0,
        }
    }

    /// The verdict on the token with `key`, if one is held and still good at `now`.
    pub(super) fn get(&mut self, key: &Key, now: Instant) -> Option<Verdict> {
        let entry = self.entries.get(key)?;
        if entry.until <= now {
            self.entries.remove(key);
            return None;
        }
        Some(entry.verdict.clone())
    }

    /// Holds `verdict` for the token with `key` until `until` (not at all if
    /// that is not after `now`), evicting the oldest entries over capacity.
    pub(super) fn put(&mut self, key: Key, verdict: Verdict, until: Instant, now: Instant) {
        if until <= now {
            return;
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        self.entries.insert(key, Entry { verdict, until, serial });
        self.order.push_back((key, serial));
        while self.entries.len() > self.capacity {
            let Some((oldest, serial)) = self.order.pop_front() else { break };
            if self.entries.get(&oldest).is_some_and(|entry| entry.serial == serial) {
                self.entries.remove(&oldest);
            }
        }
        // Stale order items (keys put again, entries expired) must not grow
        // the queue without bound: rebuild it from the live entries.
        if self.order.len() > 2 * self.capacity {
            self.entries.retain(|_, entry| entry.until > now);
            let mut live: Vec<(Key, u64)> =
                self.entries.iter().map(|(key, entry)| (*key, entry.serial)).collect();
            live.sort_by_key(|(_, serial)| *serial);
            self.order = live.into();
        }
    }

    /// How many verdicts are held (some may have expired, unread).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn principal(subject: &str) -> Verdict {
        Ok(Principal {
            issuer: "https://issuer.example".into(),
            subject: subject.into(),
            client_id: None,
            scopes: vec![],
        })
    }

    #[test]
    fn a_verdict_lives_until_its_deadline() {
        let mut cache = TokenCache::new(10);
        let now = Instant::now();
        cache.put(key("a"), principal("alice"), now + Duration::from_secs(60), now);
        cache.put(key("b"), Err("revoked"), now + Duration::from_secs(10), now);
        assert_eq!(cache.get(&key("a"), now + Duration::from_secs(59)), Some(principal("alice")));
        assert_eq!(cache.get(&key("b"), now + Duration::from_secs(9)), Some(Err("revoked")));
        assert_eq!(cache.get(&key("b"), now + Duration::from_secs(10)), None);
        assert_eq!(cache.get(&key("a"), now + Duration::from_secs(60)), None);
        assert_eq!(cache.get(&key("c"), now), None);
        // A deadline already past is not held at all.
        cache.put(key("d"), principal("dan"), now, now);
        assert_eq!(cache.get(&key("d"), now), None);
    }

    #[test]
    fn over_capacity_the_oldest_entries_go_first() {
        let mut cache = TokenCache::new(100);
        let now = Instant::now();
        let later = now + Duration::from_secs(60);
        for n in 0..250 {
            cache.put(key(&n.to_string()), principal(&n.to_string()), later, now);
            assert!(cache.len() <= 100);
        }
        assert_eq!(cache.len(), 100);
        assert_eq!(cache.get(&key("149"), now), None);
        assert_eq!(cache.get(&key("150"), now), Some(principal("150")));
        assert_eq!(cache.get(&key("249"), now), Some(principal("249")));
    }

    #[test]
    fn putting_the_same_tokens_again_and_again_keeps_the_queue_bounded() {
        let mut cache = TokenCache::new(10);
        let mut now = Instant::now();
        for round in 0..1000 {
            now += Duration::from_secs(1);
            cache.put(key(&(round % 3).to_string()), Err("revoked"), now + Duration::from_secs(10), now);
            assert!(cache.order.len() <= 2 * 10 + 1, "{}", cache.order.len());
        }
        // Re-putting refreshes the deadline; the key stays findable.
        assert_eq!(cache.get(&key("0"), now), Some(Err("revoked")));
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn the_key_is_a_hash_not_the_token() {
        let token = "opaque-token-value";
        let hashed = key(token);
        assert_eq!(hashed, key(token));
        assert_ne!(hashed, key("another"));
        assert!(!hashed.windows(token.len()).any(|window| window == token.as_bytes()));
    }
}
