#![no_main]
//! See [`goondan_runtime_fuzz::ipc_frame`].

libfuzzer_sys::fuzz_target!(|data: &[u8]| goondan_runtime_fuzz::ipc_frame(data));
