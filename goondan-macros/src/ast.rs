//! Normalises the three forms `#[tool]` accepts (an inline `mod`, an `impl` block, a lone
//! `fn`) into one [`Tool`] with its [`Export`]s. While reading, it strips the helper attributes
//! (`#[export]`, and doc/`serde`/`schemars` attributes on parameters) from the user's item, so
//! the item can be emitted as written.
//!
//! Nothing here decides whether the item is *valid*; `valid.rs` does. Validation and code
//! generation look at [`Host`] only where the form really matters (where generated code goes,
//! how a handler reaches the function).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{
    Attribute, FnArg, Generics, Ident, ImplItem, Item, LitInt, LitStr, Pat, Receiver, ReturnType,
    Signature, Type, Visibility,
};

use crate::attr::{self, ExportAttr, ToolAttr};
use crate::ctxt::Ctxt;

/// One Tool resource.
pub(crate) struct Tool {
    pub(crate) attr: ToolAttr,
    /// The item's doc comments, the description when `description` is not given.
    pub(crate) docs: Option<String>,
    pub(crate) host: Host,
    pub(crate) exports: Vec<Export>,
    /// The item's keyword and name, where an error about the whole item goes.
    pub(crate) head: TokenStream,
}

/// Where the exports live, which decides where the generated code goes.
pub(crate) enum Host {
    /// `mod name { ... }`: free functions, called by name from inside the module.
    Module,
    /// `impl Type { ... }`: methods taking `&self`, called on a shared instance.
    Impl {
        self_ty: Box<Type>,
        generics: Generics,
    },
    /// A lone `fn`: the resource gets a type namespace twin named after it.
    Fn { ident: Ident, vis: Visibility },
}

/// One export: a function of the resource.
pub(crate) struct Export {
    /// The function's name.
    pub(crate) ident: Ident,
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
    /// The signature as written (helper attributes removed).
    pub(crate) sig: Signature,
    pub(crate) receiver: Option<Receiver>,
    /// The parameters after the receiver, in order.
    pub(crate) params: Vec<Param>,
    pub(crate) inputs: Inputs,
    pub(crate) output: Output,
}

/// The title and effect hints of an export; `None` when not written.
#[derive(Default)]
pub(crate) struct Annotations {
    pub(crate) title: Option<LitStr>,
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
}

impl Annotations {
    /// Whether nothing is written.
    pub(crate) fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.read_only.is_none()
            && self.destructive.is_none()
            && self.idempotent.is_none()
            && self.open_world.is_none()
    }
}

/// A parameter after the receiver.
pub(crate) struct Param {
    pub(crate) pat: Pat,
    pub(crate) ty: Type,
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
    /// Only the schema tells, so the generated code decides when the tool is built.
    BySchema,
}

/// `#[export(input = "whole")]`: the lone input parameter is the whole input.
pub(crate) const INPUT_WHOLE: &str = "whole";
/// `#[export(input = "named")]`: every input parameter is a named property.
pub(crate) const INPUT_NAMED: &str = "named";

/// What the function returns.
pub(crate) enum Output {
    /// Any value; `()` when there is no return type.
    Infallible(Type),
    /// A type named `Result`: `Ok` is the output, `Err` the tool error. `ok` and `err` are
    /// known when written as `Result<T, E>` (`T` alone for aliases such as `io::Result<T>`).
    Fallible {
        ty: Box<Type>,
        ok: Option<Box<Type>>,
        err: Option<Box<Type>>,
    },
}

impl Tool {
    /// The resource name (empty when missing, which `valid` reports).
    pub(crate) fn name(&self) -> String {
        self.attr
            .name
            .as_ref()
            .map(LitStr::value)
            .unwrap_or_default()
    }
}

impl Export {
    /// The parameters the model fills, in order.
    pub(crate) fn input_params(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind == ParamKind::Input)
    }
}

impl Param {
    /// The parameter's name, when the pattern is a plain identifier.
    pub(crate) fn ident(&self) -> Option<&Ident> {
        match &self.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
            _ => None,
        }
    }
}

/// Reads `item`, stripping helper attributes from it. `None` (with an error reported) when
/// `#[tool]` does not apply to this kind of item.
pub(crate) fn parse(cx: &Ctxt, attr: ToolAttr, item: &mut Item) -> Option<Tool> {
    match item {
        Item::Mod(m) => {
            let head = head_of(&m.mod_token, &m.ident);
            let Some((_, items)) = &mut m.content else {
                cx.error_spanned_by(
                    &*m,
                    format!(
                        "`#[tool]` needs the module's contents inline: write `mod {} {{ ... }}` \
                         here instead of `mod {};`",
                        m.ident, m.ident
                    ),
                );
                return None;
            };
            let mut exports = Vec::new();
            for item in items.iter_mut() {
                let Item::Fn(f) = item else { continue };
                let is_export = matches!(f.vis, Visibility::Public(_));
                if let Some(export) = read_fn(cx, &mut f.attrs, &mut f.sig, is_export) {
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
            for item in &mut imp.items {
                let ImplItem::Fn(f) = item else { continue };
                let is_export =
                    matches!(f.vis, Visibility::Public(_)) && f.sig.receiver().is_some();
                if let Some(export) = read_fn(cx, &mut f.attrs, &mut f.sig, is_export) {
                    exports.push(export);
                }
            }
            Some(Tool {
                attr,
                docs: attr::docs(&imp.attrs),
                host: Host::Impl {
                    self_ty: imp.self_ty.clone(),
                    generics: imp.generics.clone(),
                },
                exports,
                head,
            })
        }
        Item::Fn(f) => {
            let head = head_of(&f.sig.fn_token, &f.sig.ident);
            let docs = attr::docs(&f.attrs);
            let export = read_fn(cx, &mut f.attrs, &mut f.sig, true);
            Some(Tool {
                attr,
                docs,
                host: Host::Fn {
                    ident: f.sig.ident.clone(),
                    vis: f.vis.clone(),
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

/// Reads one function. Returns the export when `is_export`; otherwise reports a stray
/// `#[export]` and leaves the function alone.
fn read_fn(
    cx: &Ctxt,
    attrs: &mut Vec<Attribute>,
    sig: &mut Signature,
    is_export: bool,
) -> Option<Export> {
    let export_attr = attr::take_export(cx, attrs);
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
    } = export_attr.unwrap_or_default();
    let annotations = Annotations {
        title,
        read_only,
        destructive,
        idempotent,
        open_world,
    };
    let mut receiver = None;
    let mut params = Vec::new();
    for arg in &mut sig.inputs {
        match arg {
            FnArg::Receiver(r) => receiver = Some(r.clone()),
            FnArg::Typed(pt) => {
                let field_attrs: Vec<Attribute> = pt
                    .attrs
                    .extract_if(.., |a| attr::is_field_attr(a))
                    .collect();
                let kind = if is_context_ref(&pt.ty) {
                    ParamKind::Context
                } else {
                    ParamKind::Input
                };
                params.push(Param {
                    pat: (*pt.pat).clone(),
                    ty: (*pt.ty).clone(),
                    field_attrs,
                    kind,
                });
            }
        }
    }
    let inputs = inputs_of(&params, input_attr.as_ref());
    let output = match &sig.output {
        ReturnType::Default => Output::Infallible(syn::parse_quote!(())),
        ReturnType::Type(_, ty) => output_of(ty),
    };
    let name =
        name.unwrap_or_else(|| LitStr::new(&sig.ident.unraw().to_string(), sig.ident.span()));
    Some(Export {
        ident: sig.ident.clone(),
        name,
        description: description.map(|d| d.value()).or_else(|| attr::docs(attrs)),
        timeout_ms,
        input_attr,
        annotations,
        output_schema,
        sig: sig.clone(),
        receiver,
        params,
        inputs,
        output,
    })
}

/// The whole-input rule: `#[export(input = "...")]` when given (an unknown value is reported
/// by `valid`); else a lone input parameter without doc comment or `serde` / `schemars`
/// attributes is decided by its schema, and anything else is named.
fn inputs_of(params: &[Param], input_attr: Option<&LitStr>) -> Inputs {
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

fn output_of(ty: &Type) -> Output {
    let Type::Path(p) = ty else {
        return Output::Infallible(ty.clone());
    };
    let Some(last) = p.path.segments.last().filter(|s| s.ident == "Result") else {
        return Output::Infallible(ty.clone());
    };
    let mut args = Vec::new();
    if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
        for arg in &a.args {
            if let syn::GenericArgument::Type(t) = arg {
                args.push(Box::new(t.clone()));
            }
        }
    }
    let mut args = args.into_iter();
    Output::Fallible {
        ty: Box::new(ty.clone()),
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
