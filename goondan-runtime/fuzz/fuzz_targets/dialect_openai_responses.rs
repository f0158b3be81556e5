#![no_main]
//! See [`goondan_runtime_fuzz::dialect_calls`].

use goondan_runtime::Dialect;

libfuzzer_sys::fuzz_target!(|data: &[u8]| goondan_runtime_fuzz::dialect_calls(
    Dialect::OPENAI_RESPONSES,
    data
));
