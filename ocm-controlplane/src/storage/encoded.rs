//! Encodings of a watch event's object, made once and shared by every watcher that sends it.
//!
//! A change is delivered to every watcher of its type. Each of them would otherwise convert the
//! object to the version it addresses and serialize it again; the first watcher to send the event
//! stores the serialized object here under a key naming the representation (the addressed
//! version of the resource), and the others reuse the bytes. The cache lives with the event in
//! the history, so it is dropped when the event leaves the history.

use std::sync::Mutex;

use bytes::Bytes;

/// The serialized forms of one event's object, by representation key.
#[derive(Debug, Default)]
pub struct EncodedCache {
    forms: Mutex<Vec<(std::sync::Arc<str>, Bytes)>>,
}

impl Clone for EncodedCache {
    fn clone(&self) -> Self {
        let forms = self.forms.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Self {
            forms: Mutex::new(forms),
        }
    }
}

impl EncodedCache {
    /// The bytes stored under `key`, or those `encode` makes (stored when it succeeds).
    ///
    /// Watchers of the same representation that arrive while the first one encodes wait for it
    /// instead of encoding the same object again.
    ///
    /// # Errors
    /// What `encode` returns; nothing is stored then.
    pub fn get_or_encode<E>(
        &self,
        key: &std::sync::Arc<str>,
        encode: impl FnOnce() -> Result<Bytes, E>,
    ) -> Result<Bytes, E> {
        // A poisoned lock only means an encoder panicked; the stored forms are still whole.
        let mut forms = self.forms.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, bytes)) = forms.iter().find(|(k, _)| **k == **key) {
            return Ok(bytes.clone());
        }
        let bytes = encode()?;
        forms.push((key.clone(), bytes.clone()));
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn each_representation_is_encoded_once_and_failures_are_not_kept() {
        let cache = EncodedCache::default();
        let v1: Arc<str> = Arc::from("v1/configmaps");
        let v2: Arc<str> = Arc::from("v2/configmaps");
        let mut calls = 0;
        let first = cache.get_or_encode::<()>(&v1, || {
            calls += 1;
            Ok(Bytes::from_static(b"one"))
        });
        let again = cache.get_or_encode::<()>(&v1, || {
            calls += 1;
            Ok(Bytes::from_static(b"other"))
        });
        assert_eq!(
            (first, again),
            (Ok(Bytes::from_static(b"one")), Ok(Bytes::from_static(b"one")))
        );
        assert_eq!(calls, 1);
        assert_eq!(
            cache.get_or_encode(&v2, || Err::<Bytes, _>("failed")),
            Err("failed")
        );
        assert_eq!(
            cache.get_or_encode::<()>(&v2, || Ok(Bytes::from_static(b"two"))),
            Ok(Bytes::from_static(b"two"))
        );
    }
}
