//! `#[tool]` for goondan-rs. Use it through `goondan_runtime::tool`.

use proc_macro::TokenStream;

/// Turns a module, an `impl` block or a function into a Goondan Tool resource.
#[proc_macro_attribute]
pub fn tool(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
