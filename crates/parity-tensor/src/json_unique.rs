//! A JSON object deserializer that rejects duplicate keys.
//!
//! serde_json silently keeps the last of two equal keys; in an oracle manifest
//! or a safetensors header that would hide a conflicting second definition.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

/// The entries of a JSON object in document order, guaranteed free of duplicate keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UniqueMap<V>(pub Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for UniqueMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UniqueVisitor<V>(PhantomData<V>);

        impl<'de, V: Deserialize<'de>> Visitor<'de> for UniqueVisitor<V> {
            type Value = UniqueMap<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
                let mut seen = HashSet::new();
                let mut entries = Vec::new();
                while let Some(key) = access.next_key::<String>()? {
                    if !seen.insert(key.clone()) {
                        return Err(serde::de::Error::custom(format!("duplicate key `{key}`")));
                    }
                    let value = access.next_value::<V>()?;
                    entries.push((key, value));
                }
                Ok(UniqueMap(entries))
            }
        }

        deserializer.deserialize_map(UniqueVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_rejects_duplicates() {
        let m: UniqueMap<u32> = serde_json::from_str(r#"{"b": 1, "a": 2}"#).unwrap();
        assert_eq!(m.0, vec![("b".to_string(), 1), ("a".to_string(), 2)]);
        let err = serde_json::from_str::<UniqueMap<u32>>(r#"{"a": 1, "a": 2}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key `a`"), "{err}");
        // Escaped spellings of the same key are the same key.
        assert!(serde_json::from_str::<UniqueMap<u32>>(r#"{"a": 1, "\u0061": 2}"#).is_err());
    }
}
