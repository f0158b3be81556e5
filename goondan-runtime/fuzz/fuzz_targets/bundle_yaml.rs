#![no_main]
//! See [`goondan_runtime_fuzz::bundle_yaml`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| goondan_runtime_fuzz::bundle_yaml(data));
