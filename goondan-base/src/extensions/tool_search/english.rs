//! The words [`Bm25Ranker`](super::Bm25Ranker) reads: text made ASCII, lower-cased, split into
//! words, without English stop words, each stemmed. The `bm25` crate's default tokenizer for
//! English does the same with the same crates; it also brings a memoising macro crate and its
//! dependencies (nine crates) for the one list of stop words kept here.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// English words, stemmed, without stop words.
pub(super) struct EnglishTokenizer {
    stemmer: Stemmer,
}

impl Default for EnglishTokenizer {
    fn default() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }
}

impl bm25::Tokenizer for EnglishTokenizer {
    fn tokenize(&self, text: &str) -> Vec<String> {
        let text = ascii(text).to_lowercase();
        let stop = stop_words();
        text.unicode_words()
            .filter(|word| !stop.contains(*word))
            .map(|word| self.stemmer.stem(word).into_owned())
            .collect()
    }
}

/// The text in ASCII (`é` becomes `e`, `🍕` `pizza`), `[?]` for what has no ASCII spelling.
fn ascii(text: &str) -> Cow<'_, str> {
    deunicode::deunicode_with_tofu_cow(text, "[?]")
}

/// NLTK's English stop words, in ASCII.
fn stop_words() -> &'static HashSet<String> {
    static WORDS: OnceLock<HashSet<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        stop_words::get(stop_words::LANGUAGE::English)
            .iter()
            .map(|word| ascii(word).into_owned())
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use bm25::Tokenizer;

    use super::EnglishTokenizer;

    #[test]
    fn words_are_ascii_lower_case_stemmed_and_stop_words_go() {
        let words = EnglishTokenizer::default().tokenize("Running the Connections of a Café 🍕");
        assert_eq!(words, ["run", "connect", "cafe", "pizza"]);
        assert!(EnglishTokenizer::default().tokenize("").is_empty());
        assert!(
            EnglishTokenizer::default()
                .tokenize("the and of")
                .is_empty()
        );
    }
}
