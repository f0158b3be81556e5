//! Writes the code for a valid [`Tool`]: the user's item as written (helper attributes already
//! stripped), plus a build function that assembles the `Tool` from one typed export per
//! function, reached through `TOOL` (modules, functions) or `IntoTool` (`impl` blocks).
//!
//! Every path goes through `#krate::__private`, so users need no dependency but the runtime.
//! Locals use `Span::mixed_site()` so they never shadow the user's names. Calls that require a
//! trait of the user's types carry the span of that type, so rustc puts its caret there.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Item, LitInt, LitStr, Path, Type};

use crate::ast::{Export, Host, Inputs, Output, ParamKind, Tool, find_ident};

/// The name of the build function nested in `TOOL`'s initialiser.
const BUILD_FN: &str = "__goondan_build_tool";

struct Names {
    krate: Path,
    ctx: Ident,
    input: Ident,
    this: Ident,
}

impl Names {
    fn new(tool: &Tool<'_>) -> Self {
        Names {
            krate: tool.attr.krate(),
            ctx: Ident::new("ctx", Span::mixed_site()),
            input: Ident::new("input", Span::mixed_site()),
            this: Ident::new("this", Span::mixed_site()),
        }
    }
}

/// The user's item plus everything generated for it.
pub(crate) fn expand(tool: &Tool<'_>, item: &Item) -> TokenStream {
    let names = Names::new(tool);
    let body = build_body(tool, &names);
    let mut tokens = wrap(tool, item, &names, &body);
    tokens.extend(name_checks(tool, &names.krate));
    tokens
}

/// What to emit next to compile errors: the user's item, plus `TOOL` or `IntoTool` stubs so
/// that code using them does not fail a second time.
pub(crate) fn dummy(tool: &Tool<'_>, item: &Item) -> TokenStream {
    let names = Names::new(tool);
    let body = quote!(::core::unreachable!("`#[tool]` reported compile errors"));
    let mut tokens = wrap(tool, item, &names, &body);
    tokens.extend(name_checks(tool, &names.krate));
    tokens
}

/// Constants that evaluate the runtime's name rules (`name::check_resource_name`,
/// `check_export_name`, `check_joined_len`) on the names as written, so a bad name stops the
/// build with the rule's message and the caret on the string. The rules exist once, in the
/// runtime; the macro only points at the names.
fn name_checks(tool: &Tool<'_>, krate: &Path) -> TokenStream {
    let rule = Ident::new("rule", Span::mixed_site());
    // rustc puts the caret on the whole `panic!` call, path included, so every token of it
    // carries the name's span.
    let check = |span: Span, broken: TokenStream| {
        let panic = respan(quote!(#krate::__private::core::panic!), span);
        quote_spanned! {span=>
            const _: () = if let #broken {
                #panic("{}", #rule.message())
            };
        }
    };
    let Some(resource) = &tool.attr.name else {
        return TokenStream::new();
    };
    let err = quote!(#krate::__private::core::result::Result::Err);
    let ok = quote!(#krate::__private::core::result::Result::Ok(()));
    let mut checks = check(
        resource.span(),
        quote!(#err(#rule) = #krate::__private::name::check_resource_name(#resource)),
    );
    for export in &tool.exports {
        let name = &export.name;
        checks.extend(check(
            name.span(),
            quote!(#err(#rule) = #krate::__private::name::check_export_name(#name)),
        ));
        // The length only once both parts are valid, so one mistake gives one error.
        checks.extend(check(
            name.span(),
            quote!((#ok, #ok, #err(#rule)) = (
                #krate::__private::name::check_resource_name(#resource),
                #krate::__private::name::check_export_name(#name),
                #krate::__private::name::check_joined_len(#resource, #name),
            )),
        ));
    }
    checks
}

/// `tokens` with every span (inside groups too) set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = proc_macro2::TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

/// A `StaticTool` named `name` whose build function `build` runs `body`.
pub(crate) fn static_tool(
    krate: &Path,
    name: &str,
    build: &Ident,
    body: &TokenStream,
) -> TokenStream {
    let location = location(krate);
    quote! {
        #krate::__private::StaticTool::new(
            #name,
            {
                #[doc(hidden)]
                fn #build() -> #krate::__private::core::result::Result<
                    #krate::__private::Tool,
                    #krate::__private::ToolDefinitionError,
                > {
                    #body
                }
                #build
            },
            #location,
        )
    }
}

/// Places `body` (the code that returns the `Tool`) where each form needs it.
fn wrap(tool: &Tool<'_>, item: &Item, names: &Names, body: &TokenStream) -> TokenStream {
    let krate = &names.krate;
    let name = tool.name();
    let static_tool = static_tool(krate, &name, &format_ident!("{BUILD_FN}"), body);
    let tool_doc = format!(
        "The `{name}` Tool resource, generated by `#[tool]`; also registered for \
         `goondan_runtime::tools::tool::linked_tools()`."
    );
    match (&tool.host, item) {
        (Host::Module, Item::Mod(m)) => {
            // The one copy of the item: the module gains `TOOL` as its last item.
            let mut m = m.clone();
            let generated = quote! {
                #[doc = #tool_doc]
                pub const TOOL: #krate::__private::StaticTool = #static_tool;
                #krate::__private::inventory::submit! { TOOL }
            };
            if let Some((_, items)) = &mut m.content {
                items.push(Item::Verbatim(generated));
            }
            m.into_token_stream()
        }
        (Host::Fn { ident, vis }, item) => {
            let struct_doc = format!("The `{name}` Tool resource: `{ident}::TOOL`.");
            quote! {
                #item
                #[doc = #struct_doc]
                #[allow(non_camel_case_types, dead_code)]
                #vis struct #ident {}
                #[allow(dead_code)]
                impl #ident {
                    #[doc = #tool_doc]
                    pub const TOOL: #krate::__private::StaticTool = #static_tool;
                }
                #krate::__private::inventory::submit! { #ident::TOOL }
            }
        }
        (Host::Impl { self_ty, .. }, item) => {
            let this = &names.this;
            quote! {
                #item
                #[automatically_derived]
                impl #krate::__private::IntoTool for #self_ty {
                    fn into_tool(self) -> #krate::__private::core::result::Result<
                        #krate::__private::Tool,
                        #krate::__private::ToolDefinitionError,
                    > {
                        #[allow(unused_variables)]
                        let #this = #krate::__private::std::sync::Arc::new(self);
                        #body
                    }
                }
            }
        }
        (_, item) => item.into_token_stream(),
    }
}

/// The statements that build the `Tool`: the input check, the input types, then the builder.
fn build_body(tool: &Tool<'_>, names: &Names) -> TokenStream {
    let krate = &names.krate;
    let name = tool.name();
    let description = tool
        .attr
        .description
        .as_ref()
        .map(LitStr::value)
        .or_else(|| tool.docs.clone())
        .map(|d| quote!(.description(#d)));
    let limit = tool
        .attr
        .error_message_limit
        .as_ref()
        .and_then(|l| l.base10_parse::<usize>().ok())
        .map(|l| quote!(.error_message_limit(#l)));
    let location = location(krate);
    let mut prelude = TokenStream::new();
    let mut exports = Vec::new();
    for export in &tool.exports {
        exports.push(export_of(tool, export, names, &mut prelude));
    }
    quote! {
        #prelude
        #krate::__private::finish_generated(
            #krate::__private::Tool::builder(#name)
                #description
                #limit
                .origin(#location)
                #(.export(#exports))*
        )
    }
}

/// How the handler reads the model's arguments: the one choice the macro makes for each
/// function, from its tokens.
#[derive(Clone, Copy)]
enum Reading<'a> {
    /// `#[export(input = "whole")]`: the lone parameter's type is the input.
    Whole,
    /// A lone parameter without attributes: the runtime's `export_lone` reads it as the whole
    /// input or as the one property the marker (see [`params_marker`]) names, as its type's
    /// schema says when the export is built (the macro sees only the type's name).
    Lone(&'a Ident),
    /// Parameters with only doc comments: the runtime's `export_named` reads the tuple of
    /// their values, in parameter order, by the names the marker gives.
    Named(&'a Ident),
    /// The generated struct with one field per input parameter (parameters with `serde` or
    /// `schemars` attributes, or more than the runtime's tuples hold), the whole input.
    Derived,
}

/// The `Export` expression of `export`.
fn export_of(
    tool: &Tool<'_>,
    export: &Export<'_>,
    names: &Names,
    prelude: &mut TokenStream,
) -> TokenStream {
    if let (Inputs::Whole, Some(whole_ty)) = (export.inputs, whole_type(export, names)) {
        return export_expr(tool, export, names, Reading::Whole, &whole_ty);
    }
    let Some(marker) = params_marker(export, names, prelude) else {
        let derived = derived_type(export, names, prelude);
        return export_expr(tool, export, names, Reading::Derived, &derived);
    };
    match (export.inputs, whole_type(export, names)) {
        (Inputs::BySchema, Some(whole_ty)) => {
            export_expr(tool, export, names, Reading::Lone(&marker), &whole_ty)
        }
        _ => {
            let types = export.input_params().map(|p| checked(p.ty, names));
            let tuple = quote!((#(#types,)*));
            export_expr(tool, export, names, Reading::Named(&marker), &tuple)
        }
    }
}

/// `<T as InputType>::Type`, spanned on `T`, so that a type that cannot be an input is
/// reported once, on the user's type.
fn checked(ty: &Type, names: &Names) -> TokenStream {
    let krate = &names.krate;
    quote_spanned!(ty.span()=> <#ty as #krate::__private::InputType>::Type)
}

/// The lone input parameter's type, as the whole input.
fn whole_type(export: &Export<'_>, names: &Names) -> Option<TokenStream> {
    let mut params = export.input_params();
    match (params.next(), params.next()) {
        (Some(only), None) => Some(checked(only.ty, names)),
        _ => None,
    }
}

/// The most parameters the runtime reads as a tuple: the tuples its `ParamTuple` is
/// implemented for.
const MAX_PARAMS: usize = 12;

/// The unit struct `__GoondanParams_{fn}` naming the function's parameters, with its
/// `ParamNames` impl, added to `prelude`. `None` when a parameter has attributes other than
/// doc comments (or a doc that is not a literal), or when there are none or too many.
fn params_marker(export: &Export<'_>, names: &Names, prelude: &mut TokenStream) -> Option<Ident> {
    let krate = &names.krate;
    let params: Vec<_> = export.input_params().collect();
    if params.is_empty() || params.len() > MAX_PARAMS {
        return None;
    }
    let mut keys = Vec::new();
    let mut docs = Vec::new();
    for param in &params {
        let mut lines = Vec::new();
        for attr in &param.field_attrs {
            if !attr.path().is_ident("doc") {
                return None;
            }
            let syn::Meta::NameValue(nv) = &attr.meta else {
                return None;
            };
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) = &nv.value
            else {
                return None;
            };
            let line = text.value();
            lines.push(line.strip_prefix(' ').map(str::to_owned).unwrap_or(line));
        }
        let (title, description) = title_and_description(&lines.join("\n"));
        docs.push(quote!((#title, #description)));
        keys.push(param.ident()?.unraw().to_string());
    }
    let marker = format_ident!("__GoondanParams_{}", export.ident.unraw());
    prelude.extend(quote! {
        #[allow(non_camel_case_types)]
        struct #marker;
        #[automatically_derived]
        impl #krate::__private::ParamNames for #marker {
            const NAMES: &'static [&'static str] = &[#(#keys),*];
            const DOCS: &'static [(&'static str, &'static str)] = &[#(#docs),*];
        }
    });
    Some(marker)
}

/// A doc comment's title (a first line starting with `#`) and description, as schemars takes
/// them from a field's doc comment.
fn title_and_description(doc: &str) -> (String, String) {
    let doc = doc.trim_matches(|c: char| c.is_ascii_whitespace());
    match doc.strip_prefix('#') {
        Some(_) => {
            let (first, rest) = doc.split_once('\n').unwrap_or((doc, ""));
            let title = first.trim_start_matches('#');
            let trim = |s: &str| s.trim_matches(|c: char| c.is_ascii_whitespace()).to_owned();
            (trim(title), trim(rest))
        }
        None => (String::new(), doc.to_owned()),
    }
}

/// A generated struct with one field per input parameter, added to `prelude`; returns its
/// type.
fn derived_type(export: &Export<'_>, names: &Names, prelude: &mut TokenStream) -> TokenStream {
    let krate = &names.krate;
    let struct_ident = format_ident!("__GoondanInput_{}", export.ident.unraw());
    let serde_crate = quote!(#krate::__private::serde).to_string();
    let schemars_crate = quote!(#krate::__private::schemars).to_string();
    // The struct is generic over the parameter types, and its derived impls require only
    // `ToolInput` of them. Its type arguments go through `InputType`, spanned on the
    // user's types: a type that is not `Deserialize + JsonSchema` is reported once, on that
    // type, instead of several times inside the derives. A parameter with `serde` or
    // `schemars` attributes keeps its concrete type, since those may need more traits of it
    // (`#[serde(default)]` needs `Default`).
    let mut generics = Vec::new();
    let mut args = Vec::new();
    let mut fields = Vec::new();
    for param in export.input_params() {
        let attrs = &param.field_attrs;
        let ident = param.ident();
        let ty = if attrs.iter().all(|a| a.path().is_ident("doc")) {
            let generic = format_ident!("__GoondanT{}", generics.len());
            args.push(checked(param.ty, names));
            generics.push(generic.clone());
            generic.into_token_stream()
        } else {
            param.ty.to_token_stream()
        };
        fields.push(quote!(#(#attrs)* #ident: #ty));
    }
    let bound = generics
        .iter()
        .map(|g| quote!(#g: #krate::__private::ToolInput).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    prelude.extend(quote! {
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate, deny_unknown_fields, bound = #bound)]
        #[schemars(crate = #schemars_crate, bound = #bound)]
        // Fields are named after the parameters (`fanSpeed` too), which is not for this
        // struct to warn about.
        #[allow(non_camel_case_types, non_snake_case)]
        struct #struct_ident<#(#generics),*> { #(#fields,)* }
    });
    quote!(#struct_ident<#(#args),*>)
}

/// `export::<Input, _, _>("name", handler)` with its description and timeout.
fn export_expr(
    tool: &Tool<'_>,
    export: &Export<'_>,
    names: &Names,
    reading: Reading<'_>,
    input_ty: &TokenStream,
) -> TokenStream {
    let Names {
        krate,
        ctx,
        input,
        this,
    } = names;
    let name = export.name.value();
    let uses_ctx = export.params.iter().any(|p| p.kind == ParamKind::Context);
    let has_input = export.input_params().next().is_some();
    let args = export.params.iter().map(|p| match p.kind {
        // An async handler owns its context, a sync one already has a reference.
        ParamKind::Context if export.sig.asyncness.is_some() => quote!(&#ctx),
        ParamKind::Context => quote!(#ctx),
        ParamKind::Input => match reading {
            Reading::Whole | Reading::Lone(_) => quote!(#input),
            Reading::Named(_) => {
                let at = syn::Index::from(inputs_before(export, p));
                quote!(#input.#at)
            }
            Reading::Derived => {
                let field = p.ident();
                quote!(#input.#field)
            }
        },
    });
    let ident = &export.ident;
    let mut call = match &tool.host {
        Host::Impl { self_ty, .. } => quote!(<#self_ty>::#ident(&*#this, #(#args),*)),
        _ => quote!(#ident(#(#args),*)),
    };
    if export.sig.asyncness.is_some() {
        call = quote!(#call.await);
    }
    let outcome = outcome(&export.output, krate, &call);
    let ctx_pat = if uses_ctx { quote!(#ctx) } else { quote!(_) };
    let input_pat = if has_input { quote!(#input) } else { quote!(_) };
    // An async handler owns its context (its future outlives the call); a sync one borrows it.
    let closure_head = if export.sig.asyncness.is_some() {
        quote!(move |#ctx_pat: #krate::__private::ToolContext, #input_pat: #input_ty|)
    } else {
        quote!(move |#ctx_pat: &#krate::__private::ToolContext, #input_pat: #input_ty|)
    };
    let is_async = export.sig.asyncness.is_some();
    let handler = match (&tool.host, is_async) {
        (Host::Impl { .. }, true) => quote! {{
            let #this = #krate::__private::std::sync::Arc::clone(&#this);
            #closure_head {
                let #this = #krate::__private::std::sync::Arc::clone(&#this);
                async move { #outcome }
            }
        }},
        (Host::Impl { .. }, false) => quote! {{
            let #this = #krate::__private::std::sync::Arc::clone(&#this);
            #closure_head { #outcome }
        }},
        (_, true) => quote!(#closure_head async move { #outcome }),
        (_, false) => quote!(#closure_head { #outcome }),
    };
    // A synchronous function answers without a future (no box, no poll).
    let constructor = match (reading, is_async) {
        (Reading::Lone(marker), true) => {
            quote!(#krate::__private::export_lone::<#marker, #input_ty, _, _>)
        }
        (Reading::Lone(marker), false) => {
            quote!(#krate::__private::export_sync_lone::<#marker, #input_ty, _>)
        }
        (Reading::Named(marker), true) => {
            quote!(#krate::__private::export_named::<#marker, #input_ty, _, _>)
        }
        (Reading::Named(marker), false) => {
            quote!(#krate::__private::export_sync_named::<#marker, #input_ty, _>)
        }
        (_, true) => quote!(#krate::__private::export::<#input_ty, _, _>),
        (_, false) => quote!(#krate::__private::export_sync::<#input_ty, _>),
    };
    let description = export
        .description
        .as_ref()
        .map(|d| quote!(.with_description(#d)));
    let timeout = export
        .timeout_ms
        .as_ref()
        .and_then(timeout_ms)
        .map(|ms| quote!(.with_timeout(#krate::__private::millis(#ms))));
    let annotations = annotations(&export.annotations, krate);
    let ui = ui(export, krate);
    let output_schema = export
        .output_schema
        .as_ref()
        .and_then(|_| crate::valid::output_type(export))
        .map(|ty| {
            let schema = quote_spanned!(ty.span()=> #krate::__private::output_schema::<#ty>());
            quote!(.with_output_schema_value(#schema))
        });
    quote! {
        #constructor(#name, #handler)
            #description
            #timeout
            #annotations
            #output_schema
            #ui
    }
}

/// `.with_ui(...)` for MCP Apps' `ui` and `visibility` of `#[export]`.
fn ui(export: &Export<'_>, krate: &Path) -> Option<TokenStream> {
    if export.ui.is_none() && export.visibility.is_none() {
        return None;
    }
    let uri = match &export.ui {
        Some(uri) => quote!(#krate::__private::core::option::Option::Some(
            #krate::__private::std::string::String::from(#uri)
        )),
        None => quote!(#krate::__private::core::option::Option::None),
    };
    let visibility = match export.visibility.as_ref().map(LitStr::value).as_deref() {
        Some("model") => quote!(Model),
        Some("app") => quote!(App),
        _ => quote!(Both),
    };
    Some(quote!(.with_ui(#krate::__private::ExportUi {
        resource_uri: #uri,
        visibility: #krate::__private::Visibility::#visibility,
    })))
}

/// How many input parameters come before `param`: its place in the tuple of values.
fn inputs_before(export: &Export<'_>, param: &crate::ast::Param<'_>) -> usize {
    export
        .input_params()
        .take_while(|p| !std::ptr::eq(*p, param))
        .count()
}

/// `.with_annotations(...)` for what `#[export]` says of the title and effects.
fn annotations(a: &crate::ast::Annotations, krate: &Path) -> Option<TokenStream> {
    if a.is_empty() {
        return None;
    }
    let mut calls = TokenStream::new();
    if let Some(title) = &a.title {
        calls.extend(quote!(.title(#title)));
    }
    for (method, value) in [
        ("read_only", a.read_only),
        ("destructive", a.destructive),
        ("idempotent", a.idempotent),
        ("open_world", a.open_world),
    ] {
        if let Some(v) = value {
            let method = Ident::new(method, Span::call_site());
            calls.extend(quote!(.#method(#v)));
        }
    }
    match a.task_support.as_ref().map(LitStr::value).as_deref() {
        Some("required") => {
            calls.extend(quote!(.task_support(#krate::__private::TaskSupport::Required)))
        }
        Some("optional") => {
            calls.extend(quote!(.task_support(#krate::__private::TaskSupport::Optional)))
        }
        _ => {}
    }
    Some(quote!(.with_annotations(#krate::__private::ExportAnnotations::new() #calls)))
}

fn timeout_ms(lit: &LitInt) -> Option<u64> {
    lit.base10_parse().ok()
}

/// Turns the value of `call` into `Result<Outcome, ToolError>`. Each conversion is spanned on
/// the type it needs a trait of, so a missing `Serialize` or `From<E> for ToolError` is
/// reported there.
fn outcome(output: &Output<'_>, krate: &Path, call: &TokenStream) -> TokenStream {
    let to_output = |ty: &Type, fallback: Span| {
        if has_impl_trait(ty) {
            quote_spanned!(fallback=> #krate::__private::output)
        } else {
            quote_spanned!(ty.span()=> #krate::__private::output::<#ty>)
        }
    };
    match output {
        Output::Infallible(ty) => {
            let f = to_output(ty, ty.span());
            quote!(#f(#call))
        }
        Output::Fallible { ty, ok, err } => {
            let ok_fn = match ok {
                Some(ok) => to_output(ok, ty.span()),
                None => quote_spanned!(ty.span()=> #krate::__private::output),
            };
            let err_fn = match err {
                Some(err) if !has_impl_trait(err) => quote_spanned! {err.span()=>
                    <#err as #krate::__private::IntoToolError>::into_tool_error
                },
                _ => quote_spanned! {ty.span()=>
                    #krate::__private::IntoToolError::into_tool_error
                },
            };
            let (ok_v, err_v) = (
                Ident::new("value", Span::mixed_site()),
                Ident::new("error", Span::mixed_site()),
            );
            quote! {
                match #call {
                    #krate::__private::core::result::Result::Ok(#ok_v) => #ok_fn(#ok_v),
                    #krate::__private::core::result::Result::Err(#err_v) => {
                        #krate::__private::core::result::Result::Err(#err_fn(#err_v))
                    }
                }
            }
        }
    }
}

/// Whether `ty` mentions `impl Trait`, which cannot be named in a turbofish.
fn has_impl_trait(ty: &Type) -> bool {
    find_ident(ty.to_token_stream(), "impl").is_some()
}

/// `"path::to::module at file.rs:line"`, where the `#[tool]` item is.
fn location(krate: &Path) -> TokenStream {
    quote! {
        #krate::__private::core::concat!(
            #krate::__private::core::module_path!(), " at ",
            #krate::__private::core::file!(), ":", #krate::__private::core::line!()
        )
    }
}
