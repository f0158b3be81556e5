//! Checks a [`Tool`] against the rules the runtime would otherwise enforce at startup (names,
//! exports) and the shapes a handler can call (receiver, parameters, signature). Every problem
//! is reported, each on the smallest token responsible.
//!
//! The name rules are not here: they live once, as `const fn`s, in the runtime's `name`
//! module, and `expand` emits constants that evaluate them on the names written here, so a
//! bad name stops the build with the caret on it.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{LitInt, LitStr, Pat, Type};

use crate::ast::{
    Export, Host, INPUT_NAMED, INPUT_WHOLE, Param, ParamKind, Tool, find_ident, is_context,
};
use crate::ctxt::Ctxt;

pub(crate) fn check(cx: &Ctxt, tool: &Tool<'_>) {
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

fn check_resource(cx: &Ctxt, tool: &Tool<'_>) {
    match &tool.attr.name {
        // A `name` that is not a string literal was already reported.
        None if tool.attr.name_given => {}
        None => cx.error_at(
            Span::call_site(),
            "missing `name`: write `#[tool(name = \"my-tool\")]` (lowercase letters, digits, \
             `_` and `-`)",
        ),
        // The name rules are checked by the constants `expand::name_checks` emits.
        Some(_) => {}
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

fn check_export(cx: &Ctxt, tool: &Tool<'_>, export: &Export<'_>) {
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
    if let Some(tasks) = &export.annotations.task_support
        && !matches!(tasks.value().as_str(), "optional" | "required")
    {
        cx.error_spanned_by(
            tasks,
            "expected `task_support = \"optional\"` or `task_support = \"required\"`",
        );
    }
    if let Some(ui) = &export.ui {
        let uri = ui.value();
        if uri.strip_prefix("ui://").is_none_or(str::is_empty) {
            cx.error_spanned_by(
                ui,
                "`ui` names a page of MCP Apps by its `ui://` URI, e.g. `ui = \"ui://counter/view.html\"`",
            );
        }
    }
    if let Some(v) = &export.visibility
        && !matches!(v.value().as_str(), "model" | "app" | "both")
    {
        cx.error_spanned_by(
            v,
            "expected `visibility = \"model\"`, `visibility = \"app\"` or `visibility = \"both\"`",
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
pub(crate) fn output_type<'a>(export: &'a Export<'_>) -> Option<&'a Type> {
    let ty: &Type = match &export.output {
        crate::ast::Output::Infallible(ty) => ty,
        crate::ast::Output::Fallible { ok, .. } => (*ok)?,
    };
    let tokens = ty.to_token_stream();
    let pending =
        matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Pending"));
    (find_ident(tokens, "impl").is_none() && !pending).then_some(ty)
}

/// `#[export(input = "whole" | "named")]`; `whole` needs exactly one plain input parameter.
fn check_input_attr(cx: &Ctxt, export: &Export<'_>, input: &LitStr) {
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

fn check_unique_exports(cx: &Ctxt, tool: &Tool<'_>) {
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

fn check_signature(cx: &Ctxt, export: &Export<'_>) {
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

fn check_receiver(cx: &Ctxt, tool: &Tool<'_>, export: &Export<'_>) {
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

fn check_input_param(cx: &Ctxt, param: &Param<'_>) {
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
        cx.error_spanned_by(param.pat, msg);
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
