//! The examples of goondan-rs, as a library so that they can be tested.
//!
//! - [`tools`]: the quickstart's tools (`text-utils`, `notes`, `admin`).
//! - [`quickstart`]: `cargo run --example quickstart`.

pub mod quickstart;
pub mod tools;

pub use tools::quickstart_tools;
