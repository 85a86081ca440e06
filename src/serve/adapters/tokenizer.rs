//! A model's `tokenizer.json` (the `tokenizers` library's format), read with
//! serde_json for servers that take text prompts (`--target-api mlx-lm`):
//! only a WordLevel model with whitespace pre-tokenization (`Whitespace` or
//! `WhitespaceSplit`), no normalizer, no post-processor and no decoder. That
//! is enough to turn an oracle case's prompt ids into the text a server
//! tokenizes back to the same ids, and a streamed answer's text into ids;
//! anything else is refused by name rather than tokenized wrongly.

use super::AdapterError;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How text is split into words before the vocabulary lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    /// `\w+|[^\w\s]+` (the library's `Whitespace`).
    Words,
    /// On whitespace only (`WhitespaceSplit`).
    Whitespace,
}

/// A WordLevel tokenizer: word <-> id, with added (special) tokens matched in text first.
#[derive(Clone, Debug)]
pub struct WordLevel {
    path: PathBuf,
    vocab: HashMap<String, u32>,
    words: HashMap<u32, String>,
    /// Added tokens' text, longest first (matched before splitting, as the library does).
    added: Vec<(String, u32)>,
    unk: Option<u32>,
    split: Split,
}

fn kind(v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(x) => Some(
            x.get("type")
                .and_then(Value::as_str)
                .unwrap_or("(no type)")
                .to_string(),
        ),
    }
}

impl WordLevel {
    /// Reads `path`; any other model, pre-tokenizer, normalizer,
    /// post-processor or decoder is a target error (exit 2) naming the file and the type.
    pub fn load(path: &Path) -> Result<WordLevel, AdapterError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| AdapterError::Target(format!("tokenizer {}: {e}", path.display())))?;
        WordLevel::parse(&text, path)
    }

    /// Parses tokenizer.json text; `path` names it in messages.
    pub fn parse(text: &str, path: &Path) -> Result<WordLevel, AdapterError> {
        let bad = |m: String| AdapterError::Target(format!("tokenizer {}: {m}", path.display()));
        let root: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let model = root.get("model").ok_or_else(|| bad("no `model`".into()))?;
        match kind(Some(model)).as_deref() {
            Some("WordLevel") => {}
            other => {
                return Err(bad(format!(
                    "model type `{}`: only a WordLevel tokenizer is supported (parity does not tokenize other types)",
                    other.unwrap_or("?")
                )))
            }
        }
        let split = match kind(root.get("pre_tokenizer")).as_deref() {
            Some("Whitespace") => Split::Words,
            Some("WhitespaceSplit") => Split::Whitespace,
            other => {
                return Err(bad(format!(
                    "pre_tokenizer `{}`: only `Whitespace` or `WhitespaceSplit` is supported",
                    other.unwrap_or("null")
                )))
            }
        };
        for field in ["normalizer", "post_processor", "decoder"] {
            if let Some(k) = kind(root.get(field)) {
                return Err(bad(format!(
                    "{field} `{k}`: not supported (parity's WordLevel reader takes none)"
                )));
            }
        }
        let entries = model
            .get("vocab")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("`model.vocab` is not an object".into()))?;
        let mut vocab = HashMap::new();
        let mut words = HashMap::new();
        for (word, id) in entries {
            let id = id
                .as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| bad(format!("vocab entry `{word}`: id {id} is not a token id")))?;
            if let Some(other) = words.insert(id, word.clone()) {
                return Err(bad(format!("id {id} is both `{other}` and `{word}`")));
            }
            vocab.insert(word.clone(), id);
        }
        let mut added = Vec::new();
        for t in root
            .get("added_tokens")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(content), Some(id)) = (
                t.get("content").and_then(Value::as_str),
                t.get("id").and_then(Value::as_u64),
            ) else {
                return Err(bad(format!("added token {t} has no `content` and `id`")));
            };
            let id = u32::try_from(id).map_err(|_| bad(format!("added token id {id}")))?;
            words.entry(id).or_insert_with(|| content.to_string());
            vocab.entry(content.to_string()).or_insert(id);
            if !content.is_empty() {
                added.push((content.to_string(), id));
            }
        }
        added.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let unk = match model.get("unk_token").and_then(Value::as_str) {
            Some(u) => Some(
                *vocab
                    .get(u)
                    .ok_or_else(|| bad(format!("unk_token `{u}` is not in the vocabulary")))?,
            ),
            None => None,
        };
        Ok(WordLevel {
            path: path.to_path_buf(),
            vocab,
            words,
            added,
            unk,
            split,
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text of `ids`: their words joined by single spaces (the library's
    /// decoding with no decoder, special tokens kept).
    pub fn decode(&self, ids: &[i64]) -> Result<String, String> {
        let mut parts = Vec::with_capacity(ids.len());
        for (k, &id) in ids.iter().enumerate() {
            let word = u32::try_from(id)
                .ok()
                .and_then(|i| self.words.get(&i))
                .ok_or_else(|| {
                    format!("token {k} is id {id}, which the vocabulary does not have")
                })?;
            parts.push(word.as_str());
        }
        Ok(parts.join(" "))
    }

    /// The ids of `text`: added tokens matched first (longest first), the
    /// rest split into words and looked up; an unknown word is the unk
    /// token, or an error when there is none.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let mut ids = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let next = self
                .added
                .iter()
                .filter_map(|(t, id)| rest.find(t.as_str()).map(|at| (at, t.len(), *id)))
                .min_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            let (plain, after) = match next {
                Some((at, len, id)) => {
                    self.words_of(&rest[..at], &mut ids)?;
                    ids.push(id);
                    ("", &rest[at + len..])
                }
                None => (rest, ""),
            };
            self.words_of(plain, &mut ids)?;
            rest = after;
        }
        Ok(ids)
    }

    fn words_of(&self, text: &str, ids: &mut Vec<u32>) -> Result<(), String> {
        for word in split(text, self.split) {
            match (self.vocab.get(word), self.unk) {
                (Some(&id), _) | (None, Some(id)) => ids.push(id),
                (None, None) => {
                    return Err(format!(
                        "word `{word}` is not in the vocabulary and there is no unk_token"
                    ))
                }
            }
        }
        Ok(())
    }
}

/// `\w` as the library's regex reads it, close enough for a vocabulary of words.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn split(text: &str, how: Split) -> Vec<&str> {
    if how == Split::Whitespace {
        return text.split_whitespace().collect();
    }
    let mut out = Vec::new();
    let mut start: Option<(usize, bool)> = None;
    for (i, c) in text.char_indices() {
        let class = (!c.is_whitespace()).then(|| is_word(c));
        match (start, class) {
            (Some((_, w)), Some(x)) if w == x => {}
            (Some((s, _)), _) => {
                out.push(&text[s..i]);
                start = class.map(|x| (i, x));
            }
            (None, Some(x)) => start = Some((i, x)),
            (None, None) => {}
        }
    }
    if let Some((s, _)) = start {
        out.push(&text[s..]);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The test model's tokenizer (examples/mlx-lm), for this module's and mlx_lm's tests.
    pub(crate) fn fixture() -> WordLevel {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mlx-lm/model/tokenizer.json");
        WordLevel::load(&path).unwrap()
    }

    #[test]
    fn the_fixture_tokenizer_decodes_and_encodes_like_the_library() {
        let t = fixture();
        // What transformers gives for this model (tools/fixtures/oracle_mlx_lm.py asserts the same).
        assert_eq!(
            t.decode(&[21, 48, 21, 5, 15]).unwrap(),
            "w17 w44 w17 w1 w11"
        );
        assert_eq!(
            t.encode("w17 w44 w17 w1 w11").unwrap(),
            vec![21, 48, 21, 5, 15]
        );
        assert_eq!(t.encode("<s>w3  </s>w9,").unwrap(), vec![1, 7, 2, 13, 0]);
        assert_eq!(t.decode(&[1, 3]).unwrap(), "<s> <pad>");
        assert!(t.decode(&[64]).unwrap_err().contains("id 64"));
    }

    #[test]
    fn other_tokenizer_types_are_refused_naming_file_and_type() {
        let p = Path::new("m/tokenizer.json");
        let bpe =
            r#"{"model": {"type": "BPE", "vocab": {}}, "pre_tokenizer": {"type": "ByteLevel"}}"#;
        let e = WordLevel::parse(bpe, p).unwrap_err();
        assert!(matches!(e, AdapterError::Target(_)));
        assert_eq!(
            e.to_string(),
            "tokenizer m/tokenizer.json: model type `BPE`: only a WordLevel tokenizer is supported (parity does not tokenize other types)"
        );
        let pre = r#"{"model": {"type": "WordLevel", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Metaspace"}}"#;
        assert!(WordLevel::parse(pre, p)
            .unwrap_err()
            .to_string()
            .contains("pre_tokenizer `Metaspace`"));
        let post = r#"{"model": {"type": "WordLevel", "vocab": {"a": 0}}, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": {"type": "TemplateProcessing"}}"#;
        assert!(WordLevel::parse(post, p)
            .unwrap_err()
            .to_string()
            .contains("post_processor `TemplateProcessing`"));
    }

    #[test]
    fn whitespace_splits_words_from_punctuation() {
        assert_eq!(
            split(" ab,c  d!? _e", Split::Words),
            vec!["ab", ",", "c", "d", "!?", "_e"]
        );
        assert_eq!(split(" ab,c  d", Split::Whitespace), vec!["ab,c", "d"]);
    }

    proptest! {
        #[test]
        fn fixture_ids_round_trip(ids in proptest::collection::vec(0i64..64, 0..40)) {
            let t = fixture();
            let text = t.decode(&ids).unwrap();
            let back: Vec<i64> = t.encode(&text).unwrap().into_iter().map(i64::from).collect();
            prop_assert_eq!(back, ids);
        }

        #[test]
        fn any_text_encodes_without_panicking(text in "\\PC{0,60}") {
            let _ = fixture().encode(&text);
        }

        #[test]
        fn any_json_parses_or_errors_without_panicking(text in "\\PC{0,120}") {
            let _ = WordLevel::parse(&text, Path::new("t.json"));
        }
    }
}
