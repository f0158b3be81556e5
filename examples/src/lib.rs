//! The examples of goondan-rs, as a library so that they can be tested.
//!
//! - [`tools`]: the quickstart's tools (`text-utils`, `notes`, `admin`).
//! - [`quickstart`]: `cargo run --example quickstart`.
//! - [`base_demo`]: the quickstart's part with the base tools.

pub mod base_demo;
pub mod quickstart;
pub mod tools;

pub use tools::quickstart_tools;
