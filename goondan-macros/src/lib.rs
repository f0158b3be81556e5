//! `#[tool]` for goondan-rs. Use it through `goondan_runtime::tool` (or the runtime's
//! prelude); this crate is its implementation.
//!
//! The work is split by phase: `attr` reads the attribute arguments, `ast` strips the helper
//! attributes and normalises a module, an `impl` block or a function into one `Tool` that
//! borrows the item, `valid` checks it, `expand` writes the code (with constants that evaluate
//! the runtime's own name rules at compile time). `ctxt` collects every error so one compile
//! shows them all; `placeholder` keeps `TOOL` defined when the item cannot be read, so one
//! mistake gives one error. `tool_input` is `#[tool_input]`, the serde and schemars derives
//! through the runtime.

mod ast;
mod attr;
mod ctxt;
mod expand;
mod placeholder;
mod tool_input;
mod valid;

use proc_macro::TokenStream;

/// Turns an inline module, an `impl` block or a function into a Goondan Tool resource: one
/// export per function, a JSON Schema per export (from the parameters), one handler per
/// export.
///
/// Use it as `goondan_runtime::tool`; the runtime's page for it starts with an example.
///
/// # Forms
/// - **`mod name { ... }`** (inline): every `pub fn`, sync or `async`, is an export; other
///   functions are helpers. Adds `name::TOOL`, a [`StaticTool`], registered through
///   `inventory` (see `goondan_runtime::tools::tool::linked_tools`).
/// - **`impl Type { ... }`**: every `pub fn` taking `&self` is an export; `pub fn`s without a
///   receiver (constructors) are left alone. Implements `IntoTool for Type`, so
///   `Type::new(..).into_tool()?` builds the tool around one shared instance. Not registered:
///   it needs state. Not generic.
/// - **`fn name(..)`**: a resource with one export named after the function. Adds a type
///   `name` (braced, so it does not clash with the function) with `name::TOOL`, registered.
///
/// # Arguments
/// `#[tool(name = "...", description = "...", error_message_limit = N, crate = path)]`:
/// - `name` (required): the resource name: ASCII letters, digits, `_`, `-`; starts with a
///   letter or `_`; no `__`; does not end with `_`. Lowercase (`text-utils`) is the
///   documented style; upper-case letters are accepted, as in `my-tool__doSomething` (NAME-5).
/// - `description`: else the item's doc comments (for a lone `fn`, its doc comments describe
///   both the resource and the export).
/// - `error_message_limit`: how many characters of an error message the model sees (default
///   1000).
/// - `crate`: where the runtime is, for crates that re-export it (default
///   `::goondan_runtime`).
///
/// On an export, `#[export(...)]` takes these keys, each at most once:
/// - `name = "..."`: the export name (default: the function's name without `r#`; same
///   characters as a resource name, e.g. `setChatAction`). Each `{resource}__{export}` must
///   fit in 64 characters.
/// - `description = "..."`: default, its doc comments.
/// - `timeout_ms = N`: the call's deadline.
/// - `input = "named" | "whole"`: how its parameters make the input (see *Inputs*).
/// - `title = "..."`: the human title (MCP's `title`).
/// - `read_only`, `destructive`, `idempotent`, `open_world`: the effect hints, each a bare
///   flag (`true`) or `= true`/`= false`.
/// - `output_schema`: publish the JSON Schema of the output type (MCP's `outputSchema`).
/// - `task_support = "optional" | "required"`: whether its calls may or must run as MCP
///   tasks.
///
/// Place it after `#[tool]` on a lone `fn`. It is removed from the emitted code.
///
/// # Inputs
/// - A `&ToolContext` parameter, at any position, receives the call's context; it is not part
///   of the schema.
/// - Every other parameter is a property of the input object, named after the parameter. Its
///   `///` doc comment becomes the property's description; `#[serde(...)]` and
///   `#[schemars(...)]` on it apply to the property. `Option<T>` is not required. Unknown
///   properties are refused. No parameter: the input is `{}`.
/// - **Whole-struct input:** when there is exactly one such parameter, *without* doc comment or
///   `serde`/`schemars` attribute, its type's schema decides, when the tool is built: an
///   object with properties (a struct with named fields) *is* the input, so
///   `fn count(input: CountInput)` takes `{"text": ...}`, not `{"input": {"text": ...}}`;
///   anything else (`String`, a number, `Vec<T>`, a map, a newtype such as
///   `struct Slug(String)`, a `Uuid`, a timestamp) is a named property: `fn get(id: Slug)`
///   takes `{"id": ...}`.
/// - To say it yourself: `#[export(input = "named")]` makes every parameter a property (a doc
///   comment on the parameter does the same); `#[export(input = "whole")]` makes the lone
///   parameter the whole input whatever its type. Its schema must then be an object: when it
///   is not, building the tool fails with an error naming the tool and the export, and
///   `ToolRegistry::builder().tool(..).build()` reports it (nothing panics).
/// - Each input type must implement `Deserialize` and `JsonSchema` and own its data (no
///   `&str`; use `String`). [`macro@tool_input`] derives both through the runtime, so the
///   crate needs neither `serde` nor `schemars` in its `Cargo.toml` (this crate's doc
///   examples are built so: its dev-dependencies are the runtime alone).
///
/// # Output
/// Any `Serialize` type, `()` or a `Pending`; or a type named `Result` (`Result<T, E>`,
/// `io::Result<T>`...) whose `Err` converts into `ToolError`: an `Err` reaches the model as a
/// structured error. Aliases not named `Result` are not recognised as fallible.
///
/// [`StaticTool`]: https://docs.rs/goondan-runtime/latest/goondan_runtime/struct.StaticTool.html
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let cx = ctxt::Ctxt::new();
    let attr = attr::ToolAttr::parse(&cx, args.into());
    let krate = attr.krate();
    let name = attr
        .name
        .as_ref()
        .map(syn::LitStr::value)
        .unwrap_or_default();
    let mut item: syn::Item = match syn::parse(item.clone()) {
        Ok(item) => item,
        // A syntax error: the item goes back as written, and rustc reports the error once, in
        // its own words (`syn`'s would be a second error for the same mistake).
        Err(_) => return with_errors(cx, placeholder::placeholder(&krate, &name, item.into())),
    };
    let helpers = ast::strip(&cx, &mut item);
    let Some(tool) = ast::parse(&cx, attr, &item, helpers) else {
        let tokens = quote::ToTokens::to_token_stream(&item);
        return with_errors(cx, placeholder::placeholder(&krate, &name, tokens));
    };
    valid::check(&cx, &tool);
    if cx.has_errors() {
        with_errors(cx, expand::dummy(&tool, &item))
    } else {
        expand::expand(&tool, &item).into()
    }
}

/// `tokens` followed by every error collected in `cx`.
fn with_errors(cx: ctxt::Ctxt, mut tokens: proc_macro2::TokenStream) -> TokenStream {
    if let Err(err) = cx.check() {
        tokens.extend(err.to_compile_error());
    }
    tokens.into()
}

/// Derives `Deserialize` and `JsonSchema` on a struct or enum *through the runtime*, so a
/// crate that uses struct inputs needs no `serde` or `schemars` of its own in `Cargo.toml`
/// (and cannot end up with versions other than the runtime's).
///
/// It expands to `#[derive(Deserialize, JsonSchema)]` with `#[serde(crate = "...")]` and
/// `#[schemars(crate = "...")]` set to the runtime's re-exports; `#[serde(...)]` and
/// `#[schemars(...)]` on the fields work as usual. `#[tool_input(crate = path)]` is for crates
/// that re-export the runtime, as with `#[tool]`.
///
/// Use it as `goondan_runtime::tool_input`; the runtime's page for it starts with an example.
#[proc_macro_attribute]
pub fn tool_input(args: TokenStream, item: TokenStream) -> TokenStream {
    tool_input::expand(args.into(), item.into()).into()
}

/// Sets what one export shows and how it is called: `#[export(name = "...", description =
/// "...", timeout_ms = N, input = "named" | "whole", title = "...", read_only, destructive,
/// idempotent, open_world, output_schema, task_support = "optional" | "required")]` (each
/// key is described on [`macro@tool`]).
///
/// It is read and removed by `#[tool]`, so it only works on a function inside a `#[tool]`
/// module or `impl` block, or after `#[tool]` on a lone function. Anywhere else it is an error
/// that says so.
#[proc_macro_attribute]
pub fn export(_args: TokenStream, item: TokenStream) -> TokenStream {
    let mut tokens = proc_macro2::TokenStream::from(item);
    let err = syn::Error::new(
        proc_macro2::Span::call_site(),
        "`#[export]` only works inside a `#[tool]` module or `impl` block, or after `#[tool]` on a \
         lone function; move it below `#[tool]`",
    );
    tokens.extend(err.to_compile_error());
    tokens.into()
}
