//! The safetensors JSON header, deserialised straight into typed entries.
//!
//! Going through `serde_json::Value` first cost about 17 bytes of heap per
//! header byte (a 99 MB header took 1.7 GB and 20 s). Here each entry is read
//! once into [`RawEntry`], shapes are capped at [`MAX_RANK`] dimensions, and
//! nothing else is kept, so memory stays a small multiple of the header size
//! (tests/header_memory.rs asserts the bound with a counting allocator).

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// The header key that holds free-form string metadata.
pub(crate) const METADATA_KEY: &str = "__metadata__";

/// Most dimensions a shape may have (numpy's limit, NPY_MAXDIMS, is 64).
pub(crate) const MAX_RANK: usize = 64;

/// One tensor entry of the JSON header, exactly as the format defines it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEntry {
    pub dtype: String,
    pub shape: Shape,
    pub data_offsets: [usize; 2],
}

/// A shape of at most [`MAX_RANK`] dimensions; longer arrays fail while parsing.
pub(crate) struct Shape(pub Vec<usize>);

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ShapeVisitor;

        impl<'de> Visitor<'de> for ShapeVisitor {
            type Value = Shape;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an array of at most {MAX_RANK} dimensions")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
                let mut dims = Vec::new();
                while let Some(d) = seq.next_element::<usize>()? {
                    if dims.len() == MAX_RANK {
                        return Err(de::Error::custom(format!(
                            "shape has more than {MAX_RANK} dimensions"
                        )));
                    }
                    dims.push(d);
                }
                Ok(Shape(dims))
            }
        }

        deserializer.deserialize_seq(ShapeVisitor)
    }
}

/// The whole header: the optional `__metadata__` map and the tensor entries in
/// document order (duplicate names are caught by the caller).
pub(crate) struct Header {
    pub metadata: BTreeMap<String, String>,
    pub entries: Vec<(String, RawEntry)>,
}

impl<'de> Deserialize<'de> for Header {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct HeaderVisitor;

        impl<'de> Visitor<'de> for HeaderVisitor {
            type Value = Header;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object of tensor entries")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Header, A::Error> {
                let mut metadata = None;
                let mut entries = Vec::new();
                while let Some(key) = access.next_key::<String>()? {
                    if key == METADATA_KEY {
                        if metadata.is_some() {
                            return Err(de::Error::custom(format!(
                                "duplicate key `{METADATA_KEY}`"
                            )));
                        }
                        // MLX's `mx.save_safetensors` writes `"__metadata__": null`
                        // when there is none: that is no metadata, not an error.
                        let map = access
                            .next_value::<Option<BTreeMap<String, String>>>()
                            .map_err(|e| {
                                de::Error::custom(format!(
                                    "`{METADATA_KEY}` must map strings to strings: {e}"
                                ))
                            })?;
                        metadata = Some(map.unwrap_or_default());
                        continue;
                    }
                    let entry = access
                        .next_value::<RawEntry>()
                        .map_err(|e| de::Error::custom(format!("tensor `{key}`: {e}")))?;
                    entries.push((key, entry));
                }
                Ok(Header {
                    metadata: metadata.unwrap_or_default(),
                    entries,
                })
            }
        }

        deserializer.deserialize_map(HeaderVisitor)
    }
}
