#![no_main]
//! See [`goondan_runtime_fuzz::args_differential`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| goondan_runtime_fuzz::args_differential(data));
