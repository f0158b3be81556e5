//! The UI cases of `#[tool]` live in `tests/`: `tests/ui.rs` runs every mistake in
//! `tests/ui/fail` (refused, with the message in its `.stderr`) and every form in
//! `tests/ui/pass` (compiled and run) with trybuild. This library is empty.
