//! Normalises the three forms `#[tool]` accepts (an inline `mod`, an `impl` block, a lone
//! `fn`) into one [`Tool`] with its [`Export`]s, in two steps, as thiserror-impl's `ast.rs`
//! borrows its input: [`strip`] takes the helper attributes (`#[export]`, and
//! doc/`serde`/`schemars` attributes on parameters) off the user's item in one pass, so the
//! item can be emitted as written; then [`parse`] borrows the stripped item, and every type,
//! pattern and signature in the AST is a reference into it.
//!
//! Nothing here decides whether the item is *valid*; `valid.rs` does. Validation and code
//! generation look at [`Host`] only where the form really matters (where generated code goes,
//! how a handler reaches the function).

use std::borrow::Cow;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{
    Attribute, FnArg, Generics, Ident, ImplItem, Item, LitInt, LitStr, Pat, Receiver, ReturnType,
    Signature, Type, Visibility,
};

use crate::attr::{self, ExportAttr, ToolAttr};
use crate::ctxt::Ctxt;

/// One Tool resource, borrowing the stripped item.
pub(crate) struct Tool<'a> {
    pub(crate) attr: ToolAttr,
    /// The item's doc comments, the description when `description` is not given.
    pub(crate) docs: Option<String>,
    pub(crate) host: Host<'a>,
    pub(crate) exports: Vec<Export<'a>>,
    /// The item's keyword and name, where an error about the whole item goes.
    pub(crate) head: TokenStream,
}

/// Where the exports live, which decides where the generated code goes.
pub(crate) enum Host<'a> {
    /// `mod name { ... }`: free functions, called by name from inside the module.
    Module,
    /// `impl Type { ... }`: methods taking `&self`, called on a shared instance.
    Impl {
        self_ty: &'a Type,
        generics: &'a Generics,
    },
    /// A lone `fn`: the resource gets a type namespace twin named after it.
    Fn {
        ident: &'a Ident,
        vis: &'a Visibility,
    },
}

/// One export: a function of the resource.
pub(crate) struct Export<'a> {
    /// The function's name.
    pub(crate) ident: &'a Ident,
    /// The export name: `#[export(name)]`, else the function's name without `r#`.
    pub(crate) name: LitStr,
    /// `#[export(description)]`, else the function's doc comments.
    pub(crate) description: Option<String>,
    pub(crate) timeout_ms: Option<LitInt>,
    /// `#[export(input = "...")]`, checked by `valid`.
    pub(crate) input_attr: Option<LitStr>,
    /// `#[export(title = "...", read_only, destructive, idempotent, open_world)]`.
    pub(crate) annotations: Annotations,
    /// `#[export(output_schema)]`: the flag as written, where errors about it go.
    pub(crate) output_schema: Option<Ident>,
    /// `#[export(ui = "ui://...")]`: the page of MCP Apps it shows, checked by `valid`.
    pub(crate) ui: Option<LitStr>,
    /// `#[export(visibility = "...")]`: who may call it, checked by `valid`.
    pub(crate) visibility: Option<LitStr>,
    /// The signature as written (helper attributes removed).
    pub(crate) sig: &'a Signature,
    pub(crate) receiver: Option<&'a Receiver>,
    /// The parameters after the receiver, in order.
    pub(crate) params: Vec<Param<'a>>,
    pub(crate) inputs: Inputs,
    pub(crate) output: Output<'a>,
}

/// The title and effect hints of an export; `None` when not written.
#[derive(Default)]
pub(crate) struct Annotations {
    pub(crate) title: Option<LitStr>,
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
    /// `task_support = "..."`, checked by `valid`.
    pub(crate) task_support: Option<LitStr>,
}

impl Annotations {
    /// Whether nothing is written.
    pub(crate) fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.read_only.is_none()
            && self.destructive.is_none()
            && self.idempotent.is_none()
            && self.open_world.is_none()
            && self.task_support.is_none()
    }
}

/// A parameter after the receiver.
pub(crate) struct Param<'a> {
    pub(crate) pat: &'a Pat,
    pub(crate) ty: &'a Type,
    /// Doc, `serde` and `schemars` attributes, moved to the generated input field.
    pub(crate) field_attrs: Vec<Attribute>,
    pub(crate) kind: ParamKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// `&ToolContext`: the handler passes the call's context.
    Context,
    /// Part of the input the model sends.
    Input,
}

/// How the model's arguments reach the function.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inputs {
    /// One field per input parameter, in a generated struct.
    Named,
    /// The only input parameter's type is the whole input: `#[export(input = "whole")]`.
    Whole,
    /// A lone input parameter without doc comment or `serde`/`schemars` attribute: the whole
    /// input when its type's schema is an object with properties, else a named property.
    /// Only the schema tells, so the runtime decides when the export is built.
    BySchema,
}

/// `#[export(input = "whole")]`: the lone input parameter is the whole input.
pub(crate) const INPUT_WHOLE: &str = "whole";
/// `#[export(input = "named")]`: every input parameter is a named property.
pub(crate) const INPUT_NAMED: &str = "named";

/// What the function returns.
pub(crate) enum Output<'a> {
    /// Any value; `()` (the one type not in the item) when there is no return type.
    Infallible(Cow<'a, Type>),
    /// A type named `Result`: `Ok` is the output, `Err` the tool error. `ok` and `err` are
    /// known when written as `Result<T, E>` (`T` alone for aliases such as `io::Result<T>`).
    Fallible {
        ty: &'a Type,
        ok: Option<&'a Type>,
        err: Option<&'a Type>,
    },
}

impl Tool<'_> {
    /// The resource name (empty when missing, which `valid` reports).
    pub(crate) fn name(&self) -> String {
        self.attr
            .name
            .as_ref()
            .map(LitStr::value)
            .unwrap_or_default()
    }
}

impl<'a> Export<'a> {
    /// The parameters the model fills, in order.
    pub(crate) fn input_params(&self) -> impl Iterator<Item = &Param<'a>> {
        self.params.iter().filter(|p| p.kind == ParamKind::Input)
    }
}

impl<'a> Param<'a> {
    /// The parameter's name, when the pattern is a plain identifier.
    pub(crate) fn ident(&self) -> Option<&'a Ident> {
        match self.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
            _ => None,
        }
    }
}

/// The helper attributes [`strip`] took off one function, in the order the functions appear.
#[derive(Default)]
pub(crate) struct FnHelpers {
    /// Its `#[export(...)]`, read.
    export: Option<ExportAttr>,
    /// The doc, `serde` and `schemars` attributes of each typed parameter, in order.
    params: Vec<Vec<Attribute>>,
}

/// The helper attributes of every function of the item, in order.
pub(crate) struct Helpers(Vec<FnHelpers>);

/// Takes the helper attributes off every function of `item` (each function of a module or an
/// `impl` block, or the lone function), reading `#[export]` on the way. The item is left as
/// it is to be emitted.
pub(crate) fn strip(cx: &Ctxt, item: &mut Item) -> Helpers {
    let mut helpers = Vec::new();
    let mut strip_fn = |attrs: &mut Vec<Attribute>, sig: &mut Signature| {
        let export = attr::take_export(cx, attrs);
        let params = sig
            .inputs
            .iter_mut()
            .filter_map(|arg| match arg {
                FnArg::Typed(pt) => Some(
                    pt.attrs
                        .extract_if(.., |a| attr::is_field_attr(a))
                        .collect(),
                ),
                FnArg::Receiver(_) => None,
            })
            .collect();
        helpers.push(FnHelpers { export, params });
    };
    match item {
        Item::Mod(m) => {
            for item in m.content.iter_mut().flat_map(|(_, items)| items) {
                if let Item::Fn(f) = item {
                    strip_fn(&mut f.attrs, &mut f.sig);
                }
            }
        }
        Item::Impl(imp) => {
            for item in &mut imp.items {
                if let ImplItem::Fn(f) = item {
                    strip_fn(&mut f.attrs, &mut f.sig);
                }
            }
        }
        Item::Fn(f) => strip_fn(&mut f.attrs, &mut f.sig),
        _ => {}
    }
    Helpers(helpers)
}

/// Reads the stripped `item` with the `helpers` [`strip`] took off it. `None` (with an error
/// reported) when `#[tool]` does not apply to this kind of item.
pub(crate) fn parse<'a>(
    cx: &Ctxt,
    attr: ToolAttr,
    item: &'a Item,
    helpers: Helpers,
) -> Option<Tool<'a>> {
    let mut helpers = helpers.0.into_iter();
    let mut next = || helpers.next().unwrap_or_default();
    match item {
        Item::Mod(m) => {
            let head = head_of(&m.mod_token, &m.ident);
            let Some((_, items)) = &m.content else {
                cx.error_spanned_by(
                    m,
                    format!(
                        "`#[tool]` needs the module's contents inline: write `mod {} {{ ... }}` \
                         here instead of `mod {};`",
                        m.ident, m.ident
                    ),
                );
                return None;
            };
            let mut exports = Vec::new();
            for item in items {
                let Item::Fn(f) = item else { continue };
                let is_export = matches!(f.vis, Visibility::Public(_));
                if let Some(export) = read_fn(cx, &f.attrs, &f.sig, next(), is_export) {
                    exports.push(export);
                }
            }
            Some(Tool {
                attr,
                docs: attr::docs(&m.attrs),
                host: Host::Module,
                exports,
                head,
            })
        }
        Item::Impl(imp) => {
            let head = head_of(&imp.impl_token, &imp.self_ty);
            if let Some((_, path, _)) = &imp.trait_ {
                cx.error_spanned_by(
                    path,
                    "`#[tool]` does not apply to a trait impl; put the tool's methods in an \
                     inherent `impl` block",
                );
                return None;
            }
            let mut exports = Vec::new();
            for item in &imp.items {
                let ImplItem::Fn(f) = item else { continue };
                let is_export =
                    matches!(f.vis, Visibility::Public(_)) && f.sig.receiver().is_some();
                if let Some(export) = read_fn(cx, &f.attrs, &f.sig, next(), is_export) {
                    exports.push(export);
                }
            }
            Some(Tool {
                attr,
                docs: attr::docs(&imp.attrs),
                host: Host::Impl {
                    self_ty: &imp.self_ty,
                    generics: &imp.generics,
                },
                exports,
                head,
            })
        }
        Item::Fn(f) => {
            let head = head_of(&f.sig.fn_token, &f.sig.ident);
            let export = read_fn(cx, &f.attrs, &f.sig, next(), true);
            Some(Tool {
                attr,
                docs: attr::docs(&f.attrs),
                host: Host::Fn {
                    ident: &f.sig.ident,
                    vis: &f.vis,
                },
                exports: export.into_iter().collect(),
                head,
            })
        }
        other => {
            cx.error_spanned_by(
                item_head(other),
                "`#[tool]` goes on an inline `mod`, an `impl` block or a `fn`; put it on the \
                 functions' module or `impl` block instead",
            );
            None
        }
    }
}

/// Reads one stripped function with its helpers. Returns the export when `is_export`;
/// otherwise reports a stray `#[export]` and leaves the function alone.
fn read_fn<'a>(
    cx: &Ctxt,
    attrs: &[Attribute],
    sig: &'a Signature,
    helpers: FnHelpers,
    is_export: bool,
) -> Option<Export<'a>> {
    let FnHelpers {
        export: export_attr,
        params: param_attrs,
    } = helpers;
    if !is_export {
        if export_attr.is_some() {
            cx.error_spanned_by(
                &sig.ident,
                "`#[export]` is on a function that is not an export; exports are the `pub fn`s \
                 of the module (in an `impl` block: the `pub fn`s taking `&self`)",
            );
        }
        return None;
    }
    let ExportAttr {
        name,
        description,
        timeout_ms,
        input: input_attr,
        title,
        read_only,
        destructive,
        idempotent,
        open_world,
        output_schema,
        task_support,
        ui,
        visibility,
    } = export_attr.unwrap_or_default();
    let annotations = Annotations {
        title,
        read_only,
        destructive,
        idempotent,
        open_world,
        task_support,
    };
    let mut receiver = None;
    let mut params = Vec::new();
    let mut param_attrs = param_attrs.into_iter();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => receiver = Some(r),
            FnArg::Typed(pt) => {
                let kind = if is_context_ref(&pt.ty) {
                    ParamKind::Context
                } else {
                    ParamKind::Input
                };
                params.push(Param {
                    pat: &pt.pat,
                    ty: &pt.ty,
                    field_attrs: param_attrs.next().unwrap_or_default(),
                    kind,
                });
            }
        }
    }
    let inputs = inputs_of(&params, input_attr.as_ref());
    let output = match &sig.output {
        ReturnType::Default => Output::Infallible(Cow::Owned(syn::parse_quote!(()))),
        ReturnType::Type(_, ty) => output_of(ty),
    };
    let name =
        name.unwrap_or_else(|| LitStr::new(&sig.ident.unraw().to_string(), sig.ident.span()));
    Some(Export {
        ident: &sig.ident,
        name,
        description: description.map(|d| d.value()).or_else(|| attr::docs(attrs)),
        timeout_ms,
        input_attr,
        annotations,
        output_schema,
        ui,
        visibility,
        sig,
        receiver,
        params,
        inputs,
        output,
    })
}

/// The whole-input rule: `#[export(input = "...")]` when given (an unknown value is reported
/// by `valid`); else a lone input parameter without doc comment or `serde` / `schemars`
/// attributes is decided by its schema, and anything else is named.
fn inputs_of(params: &[Param<'_>], input_attr: Option<&LitStr>) -> Inputs {
    if let Some(lit) = input_attr {
        return if lit.value() == INPUT_WHOLE {
            Inputs::Whole
        } else {
            Inputs::Named
        };
    }
    let mut inputs = params.iter().filter(|p| p.kind == ParamKind::Input);
    match (inputs.next(), inputs.next()) {
        (Some(only), None) if only.field_attrs.is_empty() => Inputs::BySchema,
        _ => Inputs::Named,
    }
}

/// `&ToolContext` (any path ending in `ToolContext`, behind a shared reference).
fn is_context_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => r.mutability.is_none() && is_context(&r.elem),
        _ => false,
    }
}

/// A path ending in `ToolContext`.
pub(crate) fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "ToolContext"),
        Type::Paren(p) => is_context(&p.elem),
        _ => false,
    }
}

fn output_of(ty: &Type) -> Output<'_> {
    let Type::Path(p) = ty else {
        return Output::Infallible(Cow::Borrowed(ty));
    };
    let Some(last) = p.path.segments.last().filter(|s| s.ident == "Result") else {
        return Output::Infallible(Cow::Borrowed(ty));
    };
    let mut args = Vec::new();
    if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
        for arg in &a.args {
            if let syn::GenericArgument::Type(t) = arg {
                args.push(t);
            }
        }
    }
    let mut args = args.into_iter();
    Output::Fallible {
        ty,
        ok: args.next(),
        err: args.next(),
    }
}

/// The span of the first identifier `name` in `tokens` (`impl`, `Self`...), looking inside
/// groups.
pub(crate) fn find_ident(tokens: TokenStream, name: &str) -> Option<proc_macro2::Span> {
    tokens.into_iter().find_map(|tt| match tt {
        proc_macro2::TokenTree::Ident(ident) if ident == name => Some(ident.span()),
        proc_macro2::TokenTree::Group(g) => find_ident(g.stream(), name),
        _ => None,
    })
}

/// The tokens from `first` to `last`, for an error that spans both.
fn head_of(first: &impl ToTokens, last: &impl ToTokens) -> TokenStream {
    quote!(#first #last)
}

/// An item's keyword and name.
fn item_head(item: &Item) -> TokenStream {
    match item {
        Item::Struct(s) => head_of(&s.struct_token, &s.ident),
        Item::Enum(e) => head_of(&e.enum_token, &e.ident),
        Item::Trait(t) => head_of(&t.trait_token, &t.ident),
        Item::Union(u) => head_of(&u.union_token, &u.ident),
        Item::Const(c) => head_of(&c.const_token, &c.ident),
        Item::Static(s) => head_of(&s.static_token, &s.ident),
        Item::Type(t) => head_of(&t.type_token, &t.ident),
        Item::Use(u) => u.use_token.to_token_stream(),
        other => other.to_token_stream(),
    }
}
