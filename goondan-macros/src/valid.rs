//! Checks a [`Tool`] against the rules the runtime would otherwise enforce at startup (names,
//! exports) and the shapes a handler can call (receiver, parameters, signature). Every problem
//! is reported, each on the smallest token responsible.
//!
//! The name rules mirror `goondan-runtime/src/name.rs` exactly.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{LitInt, LitStr, Pat, Type};

use crate::ast::{
    Export, Host, INPUT_NAMED, INPUT_WHOLE, Param, ParamKind, Tool, find_ident, is_context,
};
use crate::ctxt::Ctxt;

/// The separator between the resource name and the export name (NAME-1).
const SEPARATOR: &str = "__";
/// The longest joined name every provider accepts.
const MAX_TOOL_NAME_LEN: usize = 64;

pub(crate) fn check(cx: &Ctxt, tool: &Tool) {
    check_resource(cx, tool);
    if let Host::Impl { generics, .. } = &tool.host
        && (!generics.params.is_empty() || generics.where_clause.is_some())
    {
        cx.error_spanned_by(
            generics,
            "a `#[tool]` impl block cannot be generic: the tool needs concrete types; \
             implement it on a concrete type such as `impl MyTool`",
        );
    }
    for export in &tool.exports {
        check_export(cx, tool, export);
    }
    check_unique_exports(cx, tool);
}

fn check_resource(cx: &Ctxt, tool: &Tool) {
    match &tool.attr.name {
        // A `name` that is not a string literal was already reported.
        None if tool.attr.name_given => {}
        None => cx.error_at(
            Span::call_site(),
            "missing `name`: write `#[tool(name = \"my-tool\")]` (lowercase letters, digits, \
             `_` and `-`)",
        ),
        Some(name) => {
            if let Some(problem) = resource_name_problem(&name.value()) {
                cx.error_spanned_by(name, problem);
            }
        }
    }
    if let Some(limit) = &tool.attr.error_message_limit {
        positive::<usize>(cx, limit, "error_message_limit", "characters, e.g. `1000`");
    }
    if tool.exports.is_empty() {
        let msg = match tool.host {
            Host::Impl { .. } => {
                "`#[tool]` found no `pub fn` taking `&self` in this `impl` block; the model can \
                 call only `pub` methods that take `&self`"
            }
            _ => {
                "`#[tool]` found no `pub fn` in this module; make the functions the model may \
                 call `pub` (a Tool resource needs at least one export)"
            }
        };
        cx.error_spanned_by(&tool.head, msg);
    }
}

fn check_export(cx: &Ctxt, tool: &Tool, export: &Export) {
    let name = export.name.value();
    match export_name_problem(&name) {
        Some(problem) => cx.error_spanned_by(&export.name, problem),
        None => check_joined_len(cx, tool, &export.name),
    }
    if let Some(timeout) = &export.timeout_ms {
        positive::<u64>(cx, timeout, "timeout_ms", "milliseconds, e.g. `30000`");
    }
    if let Some(input) = &export.input_attr {
        check_input_attr(cx, export, input);
    }
    if let Some(title) = &export.annotations.title
        && title.value().trim().is_empty()
    {
        cx.error_spanned_by(
            title,
            "`title` is empty; write a short human-readable name, e.g. `title = \"Run a command\"`",
        );
    }
    if let (Some(flag), None) = (&export.output_schema, output_type(export)) {
        cx.error_spanned_by(
            flag,
            "`output_schema` needs an output type it can name: write the return type as \
             `T` or `Result<T, E>` with a concrete `T` (not `impl Trait`, not `Pending`)",
        );
    }
    check_signature(cx, export);
    check_receiver(cx, tool, export);
    let mut context_seen = false;
    for param in &export.params {
        match param.kind {
            ParamKind::Context if context_seen => cx.error_spanned_by(
                param.pat.to_token_stream(),
                "the context is already a parameter of this function; remove this one",
            ),
            ParamKind::Context => context_seen = true,
            ParamKind::Input => check_input_param(cx, param),
        }
    }
}

/// The type whose schema `#[export(output_schema)]` publishes: the return type, or the `Ok`
/// type of a `Result`; `None` when it cannot be named (`impl Trait`, an alias without its
/// `Ok` type) or is a pending submission.
pub(crate) fn output_type(export: &Export) -> Option<&Type> {
    let ty: &Type = match &export.output {
        crate::ast::Output::Infallible(ty) => ty,
        crate::ast::Output::Fallible { ok, .. } => ok.as_deref()?,
    };
    let tokens = ty.to_token_stream();
    let pending =
        matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Pending"));
    (find_ident(tokens, "impl").is_none() && !pending).then_some(ty)
}

/// `#[export(input = "whole" | "named")]`; `whole` needs exactly one plain input parameter.
fn check_input_attr(cx: &Ctxt, export: &Export, input: &LitStr) {
    match input.value().as_str() {
        INPUT_WHOLE => {
            let mut params = export.input_params();
            match (params.next(), params.next()) {
                (Some(only), None) => {
                    if let Some(attr) = only.field_attrs.first() {
                        cx.error_spanned_by(
                            attr,
                            "a whole input is not a property, so this attribute has nothing to \
                             apply to; put it on the input type's fields, or remove \
                             `input = \"whole\"`",
                        );
                    }
                }
                _ => cx.error_spanned_by(
                    input,
                    format!(
                        "`input = \"whole\"` needs exactly one input parameter (besides the \
                         context), whose type is the whole input; `fn {}` has {}",
                        export.ident,
                        export.input_params().count()
                    ),
                ),
            }
        }
        INPUT_NAMED => {}
        other => cx.error_spanned_by(
            input,
            format!(
                "unknown input `{other}`; expected `\"whole\"` (the lone parameter is the whole \
                 input object) or `\"named\"` (each parameter is a property)"
            ),
        ),
    }
}

fn check_joined_len(cx: &Ctxt, tool: &Tool, export_name: &LitStr) {
    let Some(resource) = &tool.attr.name else {
        return;
    };
    if let Some(problem) = joined_name_problem(&resource.value(), &export_name.value()) {
        cx.error_spanned_by(export_name, problem);
    }
}

/// `{resource}__{export}` fits in [`MAX_TOOL_NAME_LEN`] characters (NAME-1).
fn joined_name_problem(resource: &str, export: &str) -> Option<String> {
    let full = format!("{resource}{SEPARATOR}{export}");
    let len = full.chars().count();
    (len > MAX_TOOL_NAME_LEN).then(|| {
        format!(
            "tool name `{full}` is {len} characters long; providers accept at most \
             {MAX_TOOL_NAME_LEN}: shorten the resource or the export name"
        )
    })
}

fn check_unique_exports(cx: &Ctxt, tool: &Tool) {
    for (i, export) in tool.exports.iter().enumerate() {
        let name = export.name.value();
        if let Some(first) = tool.exports[..i].iter().find(|e| e.name.value() == name) {
            cx.error_spanned_by(
                &export.name,
                format!(
                    "duplicate export name `{name}`: `fn {}` already uses it; export names must \
                     be unique, so rename one with `#[export(name = \"...\")]`",
                    first.ident
                ),
            );
        }
    }
}

fn check_signature(cx: &Ctxt, export: &Export) {
    let sig = &export.sig;
    if let Some(token) = &sig.constness {
        cx.error_spanned_by(token, "a tool function cannot be `const`; remove `const`");
    }
    if let Some(token) = &sig.unsafety {
        cx.error_spanned_by(
            token,
            "a tool function cannot be `unsafe`: the model calls it with any arguments; remove \
             `unsafe` and check the arguments inside",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a tool function cannot be `extern`; remove the ABI");
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool function cannot be variadic");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool function cannot be generic: its input and output need concrete types; \
             remove the generic parameters",
        );
    }
}

fn check_receiver(cx: &Ctxt, tool: &Tool, export: &Export) {
    let Some(receiver) = &export.receiver else {
        return;
    };
    if !matches!(tool.host, Host::Impl { .. }) {
        cx.error_spanned_by(receiver, "`self` is only allowed in an `impl` block");
        return;
    }
    let msg = match &*receiver.ty {
        Type::Reference(r) if r.mutability.is_none() && is_self(&r.elem) => return,
        Type::Reference(r) if r.mutability.is_some() && is_self(&r.elem) => {
            "a tool method takes `&self`, not `&mut self`: calls run concurrently on one shared \
             instance; keep mutable state behind a `Mutex` or an atomic"
        }
        ty if is_self(ty) => {
            "a tool method takes `&self`, not `self`: one instance serves every call; write \
             `&self`"
        }
        _ => "a tool method takes `&self`; write `&self` instead of this receiver",
    };
    cx.error_spanned_by(receiver, msg);
}

fn is_self(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

fn check_input_param(cx: &Ctxt, param: &Param) {
    if param.ident().is_none() {
        let msg = match &param.pat {
            Pat::Ident(_) => {
                "a tool parameter cannot bind by `ref` or with `@`: write a plain name, e.g. \
                 `text: String`"
            }
            _ => {
                "a tool parameter must be a plain name, e.g. `text: String`: the name is the \
                 property the model fills; take the value whole and destructure it in the body"
            }
        };
        cx.error_spanned_by(&param.pat, msg);
    }
    let ty = &param.ty;
    let context_misuse = match ty {
        Type::Reference(r) => is_context(&r.elem),
        other => is_context(other),
    };
    if context_misuse {
        cx.error_spanned_by(ty, "take the context by reference: `ctx: &ToolContext`");
    } else if let Type::Reference(r) = ty {
        let hint = match &*r.elem {
            Type::Path(p) if p.path.is_ident("str") => "use `String` instead of `&str`",
            Type::Slice(_) => "use `Vec<T>` instead of `&[T]`",
            _ => "take the value itself instead of a reference",
        };
        cx.error_spanned_by(
            ty,
            format!(
                "a tool parameter cannot borrow: arguments are deserialised into owned values; \
                 {hint}"
            ),
        );
    } else if let Some(span) = find_ident(ty.to_token_stream(), "impl") {
        cx.error_at(
            span,
            "`impl Trait` cannot be a tool parameter: the input needs a concrete type",
        );
    } else if let Some(span) = find_ident(ty.to_token_stream(), "Self") {
        cx.error_at(
            span,
            "`Self` cannot appear in a tool parameter type; write the type's name",
        );
    }
}

fn positive<N>(cx: &Ctxt, lit: &LitInt, key: &str, unit: &str)
where
    N: std::str::FromStr + Default + PartialEq,
    N::Err: std::fmt::Display,
{
    match lit.base10_parse::<N>() {
        Ok(n) if n != N::default() => {}
        _ => cx.error_spanned_by(lit, format!("`{key}` must be a positive integer of {unit}")),
    }
}

/// Which part of a name a problem is about, as `name.rs` words it.
#[derive(Clone, Copy)]
enum Part {
    Resource,
    Export,
}

impl Part {
    fn as_str(self) -> &'static str {
        match self {
            Part::Resource => "resource",
            Part::Export => "export",
        }
    }
}

/// ASCII letters, digits, `_` and `-`; not empty; no `__` (NAME-3, NAME-5). Lowercase is
/// the documented style, but upper-case letters are accepted (`setChatAction`).
fn chars_problem(part: Part, name: &str) -> Option<String> {
    let what = part.as_str();
    if name.is_empty() {
        return Some(format!(
            "{what} name is empty; use letters, digits, `_` and `-`, e.g. `text-utils`"
        ));
    }
    if let Some(found) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Some(format!(
            "{what} name `{name}` contains `{found}`; use ASCII letters, digits, `_` and `-`: \
             try `{}`",
            suggest(name)
        ));
    }
    if name.contains(SEPARATOR) {
        return Some(format!(
            "{what} name `{name}` contains `__`, which is reserved to separate resource and \
             export; use a single `_` or `-`: try `{}`",
            suggest(name)
        ));
    }
    None
}

/// A resource name: [`chars_problem`], starting with a letter or `_`, not ending with `_`.
fn resource_name_problem(name: &str) -> Option<String> {
    if let Some(problem) = chars_problem(Part::Resource, name) {
        return Some(problem);
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return Some(format!(
            "resource name `{name}` must start with a letter or `_`"
        ));
    }
    if name.ends_with('_') {
        return Some(format!(
            "resource name `{name}` ends with `_`, so `{name}__...` would split at the wrong \
             `__`; remove the trailing `_`"
        ));
    }
    None
}

fn export_name_problem(name: &str) -> Option<String> {
    chars_problem(Part::Export, name)
}

/// A valid-looking spelling of `name`: `camelCase` as `camel-case`, other characters as `-`,
/// no `__`.
fn suggest(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() && out.ends_with(|p: char| p.is_ascii_lowercase()) {
            out.push('-');
        }
        let c = match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
            _ => '-',
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use goondan_runtime::ToolName;
    use goondan_runtime::name::{validate_export_name, validate_resource_name};

    const NAMES: &[&str] = &[
        "bash",
        "file-system",
        "text_utils",
        "_private",
        "v2",
        "a",
        "",
        "Text",
        "text utils",
        "a.b",
        "é",
        "my__tool",
        "tool_",
        "9lives",
        "-dash",
        "a-",
        "a___b",
        "__",
        "_",
        "x_y-z",
    ];

    #[test]
    fn name_3_and_name_5_resource_rules_mirror_the_runtime() {
        for name in NAMES {
            assert_eq!(
                resource_name_problem(name).is_none(),
                validate_resource_name(name).is_ok(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn name_3_and_name_5_export_rules_mirror_the_runtime() {
        for name in NAMES {
            assert_eq!(
                export_name_problem(name).is_none(),
                validate_export_name(name).is_ok(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn name_5_upper_case_names_are_accepted_at_compile_time() {
        assert_eq!(export_name_problem("doSomething"), None);
        assert_eq!(export_name_problem("setChatAction"), None);
        assert_eq!(resource_name_problem("MyTool"), None);
        assert!(resource_name_problem("9Lives").is_some());
        assert!(export_name_problem("do__Something").is_some());
        for name in ["doSomething", "MyTool", "9Lives", "do__Something", "Ä"] {
            assert_eq!(
                export_name_problem(name).is_none(),
                validate_export_name(name).is_ok(),
                "{name:?}"
            );
            assert_eq!(
                resource_name_problem(name).is_none(),
                validate_resource_name(name).is_ok(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn name_1_joined_length_rule_mirrors_the_runtime() {
        for (resource, export) in [("a", "b"), ("r", &*"e".repeat(61)), ("r", &*"e".repeat(62))] {
            assert_eq!(
                joined_name_problem(resource, export).is_none(),
                ToolName::new(resource, export).is_ok(),
                "{resource}__{export}"
            );
        }
        assert!(joined_name_problem("r", &"e".repeat(62)).is_some());
    }

    #[test]
    fn suggestions_are_valid_names() {
        assert_eq!(suggest("TextUtils"), "text-utils");
        assert_eq!(suggest("my__tool"), "my_tool");
        assert_eq!(suggest("a.b c"), "a-b-c");
        for name in ["TextUtils", "my__tool", "a.b c", "countWords"] {
            assert!(validate_export_name(&suggest(name)).is_ok(), "{name}");
        }
    }
}
