//! The guide: one page per chapter, each example compiled and run by `cargo test --doc`.
//!
//! Read them in order the first time; each page is short.
//!
//! 1. [`tools`]: a first tool, inputs and outputs, tools with state, the attribute's arguments.
//! 2. [`calls`]: the registry, the catalog and the executor; what is validated, and when.
//! 3. [`middleware`]: middleware around calls, Steps and Turns; approvals.
//! 4. [`testing`]: testing a tool with [`TestKit`](crate::testing::TestKit).
//! 5. [`models`]: provider formats in and out, model providers, a real model in the tests.
//! 6. [`base_tools`]: the base tools of `goondan-base`.
//! 7. [`bundles`]: bundles, the step loop, extensions and the `goondan` command.
//! 8. [`agents`]: agents in their own processes, handoff, swarms across machines.
//! 9. [`mcp`]: serving tools over MCP, and using tools from MCP servers.
//! 10. [`features`]: the workspace's crates, and which cargo features to pick.
//! 11. [`errors`]: failures as data, error codes and their `helpUrl`.
//!
//! The pages that need the runtime's default features (`host`, `mcp`, `providers`) hold their
//! examples only when those features are on; without them the page says which feature it needs.
//! Examples that need `goondan-base` (the base tools, the `goondan` command) are doc tests of
//! `goondan_base::guide`, which these pages link to.
//!
//! Beside the guide, in the repository: `docs/errors.md` (every error code: what it means, the
//! usual causes, the fix; where each `helpUrl` points), `docs/benchmarks.md` (what it costs,
//! against rmcp and a floor), `docs/conformance.md` (every rule of the Goondan Tool system and
//! the tests that prove it) and `docs/fuzzing.md`.

#[doc = include_str!("tools.md")]
pub mod tools {}

#[doc = include_str!("calls.md")]
pub mod calls {}

#[doc = include_str!("middleware.md")]
pub mod middleware {}

#[doc = include_str!("testing.md")]
pub mod testing {}

#[cfg_attr(feature = "providers", doc = include_str!("models.md"))]
#[cfg_attr(
    not(feature = "providers"),
    doc = "Models: provider formats and model providers (this page needs the `providers` feature)."
)]
pub mod models {}

#[doc = include_str!("base_tools.md")]
pub mod base_tools {}

#[cfg_attr(feature = "host", doc = include_str!("bundles.md"))]
#[cfg_attr(
    not(feature = "host"),
    doc = "Bundles, the step loop and the `goondan` command (this page needs the `host` feature)."
)]
pub mod bundles {}

#[cfg_attr(all(feature = "host", unix), doc = include_str!("agents.md"))]
#[cfg_attr(
    not(all(feature = "host", unix)),
    doc = "Agents and swarms (this page needs the `host` feature, on Unix)."
)]
pub mod agents {}

#[cfg_attr(feature = "mcp", doc = include_str!("mcp.md"))]
#[cfg_attr(
    not(feature = "mcp"),
    doc = "MCP both ways (this page needs the `mcp` feature)."
)]
pub mod mcp {}

#[doc = include_str!("features.md")]
pub mod features {}

#[doc = include_str!("errors.md")]
pub mod errors {}
