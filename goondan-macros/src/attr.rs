//! Reads the arguments of `#[tool(...)]` and `#[export(...)]`, and the doc comments that stand
//! in for a missing `description`. Only the *form* of each value is checked here (a string, an
//! integer, a path); what the values mean is checked in `valid.rs`.

use proc_macro2::TokenStream;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitInt, LitStr, Meta, Path, Token};

use crate::ctxt::Ctxt;

const NAME: &str = "name";
const DESCRIPTION: &str = "description";
const ERROR_MESSAGE_LIMIT: &str = "error_message_limit";
const CRATE: &str = "crate";
const TIMEOUT_MS: &str = "timeout_ms";
const INPUT: &str = "input";
const TITLE: &str = "title";
const READ_ONLY: &str = "read_only";
const DESTRUCTIVE: &str = "destructive";
const IDEMPOTENT: &str = "idempotent";
const OPEN_WORLD: &str = "open_world";
const OUTPUT_SCHEMA: &str = "output_schema";
const TASK_SUPPORT: &str = "task_support";
const UI: &str = "ui";
const VISIBILITY: &str = "visibility";

const TOOL_KEYS: &[&str] = &[NAME, DESCRIPTION, ERROR_MESSAGE_LIMIT, CRATE];
const TOOL_INPUT_KEYS: &[&str] = &[CRATE];
const EXPORT_KEYS: &[&str] = &[
    NAME,
    DESCRIPTION,
    TIMEOUT_MS,
    INPUT,
    TITLE,
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    OUTPUT_SCHEMA,
    TASK_SUPPORT,
    UI,
    VISIBILITY,
];
/// Keys that may stand alone (`read_only`), meaning `= true`.
const FLAG_KEYS: &[&str] = &[
    READ_ONLY,
    DESTRUCTIVE,
    IDEMPOTENT,
    OPEN_WORLD,
    OUTPUT_SCHEMA,
];

/// The name of the per-export helper attribute.
pub(crate) const EXPORT_ATTR: &str = "export";

/// `#[tool(name = "...", description = "...", error_message_limit = N, crate = path)]`.
#[derive(Default)]
pub(crate) struct ToolAttr {
    pub(crate) name: Option<LitStr>,
    /// Whether `name` was written at all (even with a bad value).
    pub(crate) name_given: bool,
    pub(crate) description: Option<LitStr>,
    pub(crate) error_message_limit: Option<LitInt>,
    pub(crate) krate: Option<Path>,
}

/// `#[export(...)]`: `name`, `description`, `timeout_ms`, `input`, `title`, the four effect
/// hints, `output_schema`, `task_support`, and MCP Apps' `ui` and `visibility`.
#[derive(Default)]
pub(crate) struct ExportAttr {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) timeout_ms: Option<LitInt>,
    /// How the parameters make the input; `valid.rs` checks the value.
    pub(crate) input: Option<LitStr>,
    /// The human title (MCP `title`).
    pub(crate) title: Option<LitStr>,
    /// The effect hints, each `None` when not written.
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
    /// `output_schema`: publish the output type's JSON Schema.
    pub(crate) output_schema: Option<syn::Ident>,
    /// `task_support = "optional" | "required"`; `valid.rs` checks the value.
    pub(crate) task_support: Option<LitStr>,
    /// `ui = "ui://..."`: the page of MCP Apps the export shows; `valid.rs` checks the value.
    pub(crate) ui: Option<LitStr>,
    /// `visibility = "model" | "app" | "both"`; `valid.rs` checks the value.
    pub(crate) visibility: Option<LitStr>,
}

/// One `key = value` (or a bare `key`, which is reported later).
struct Arg {
    key: Ident,
    value: Option<Expr>,
}

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        // `crate` is a keyword, so accept any identifier here and check the name afterwards.
        let key = input.call(Ident::parse_any)?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Arg { key, value })
    }
}

/// Parses `key = value, ...`, reporting unknown, duplicate and value-less keys. Returns the
/// known keys in order, with their values (`None` when missing, already reported, or a bare
/// flag) and the key's token, where errors about a flag go.
fn parse_args(
    cx: &Ctxt,
    tokens: TokenStream,
    allowed: &[&str],
) -> Vec<(String, Option<Expr>, Ident)> {
    let args = match Punctuated::<Arg, Token![,]>::parse_terminated.parse2(tokens) {
        Ok(args) => args,
        Err(err) => {
            cx.syn_error(err);
            return Vec::new();
        }
    };
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for Arg { key, value } in args {
        let name = key.unraw().to_string();
        if !allowed.contains(&name.as_str()) {
            cx.error_spanned_by(&key, unknown_key_message(&name, allowed));
            continue;
        }
        if seen.contains(&name) {
            cx.error_spanned_by(
                &key,
                format!("duplicate `{name}` argument; remove one of them"),
            );
            continue;
        }
        seen.push(name.clone());
        if value.is_none() && !FLAG_KEYS.contains(&name.as_str()) {
            cx.error_spanned_by(&key, format!("expected a value: `{}`", example(&name)));
        }
        out.push((name, value, key));
    }
    out
}

fn unknown_key_message(found: &str, allowed: &[&str]) -> String {
    let list: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
    format!(
        "unknown argument `{found}`; expected one of {}",
        list.join(", ")
    )
}

fn example(key: &str) -> &'static str {
    match key {
        NAME => "name = \"my-tool\"",
        DESCRIPTION => "description = \"What it does\"",
        ERROR_MESSAGE_LIMIT => "error_message_limit = 1000",
        TIMEOUT_MS => "timeout_ms = 30000",
        INPUT => "input = \"whole\"",
        TITLE => "title = \"Run a command\"",
        TASK_SUPPORT => "task_support = \"optional\"",
        UI => "ui = \"ui://counter/view.html\"",
        VISIBILITY => "visibility = \"app\"",
        READ_ONLY | DESTRUCTIVE | IDEMPOTENT | OPEN_WORLD | OUTPUT_SCHEMA => "read_only",
        _ => "crate = ::goondan_runtime",
    }
}

fn lit_str(cx: &Ctxt, key: &str, value: Expr) -> Option<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(lit),
        other => {
            cx.error_spanned_by(
                other,
                format!("expected a string literal: `{}`", example(key)),
            );
            None
        }
    }
}

fn lit_int(cx: &Ctxt, key: &str, value: Expr) -> Option<LitInt> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => Some(lit),
        other => {
            cx.error_spanned_by(
                other,
                format!("expected an integer literal: `{}`", example(key)),
            );
            None
        }
    }
}

/// A flag: bare (`read_only`) is `true`; `read_only = false` says so explicitly.
fn flag(cx: &Ctxt, key: &str, value: Option<Expr>) -> Option<bool> {
    match value {
        None => Some(true),
        Some(Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        })) => Some(b.value),
        Some(other) => {
            cx.error_spanned_by(
                other,
                format!("expected `true` or `false`, or the bare flag: `{key}`"),
            );
            None
        }
    }
}

fn path(cx: &Ctxt, value: Expr) -> Option<Path> {
    match value {
        Expr::Path(p) if p.qself.is_none() && p.attrs.is_empty() => Some(p.path),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => match lit.parse::<Path>() {
            Ok(path) => Some(path),
            Err(err) => {
                cx.syn_error(err);
                None
            }
        },
        other => {
            cx.error_spanned_by(other, format!("expected a path: `{}`", example(CRATE)));
            None
        }
    }
}

impl ToolAttr {
    /// `crate = path`, else `::goondan_runtime`: where generated code finds the runtime.
    pub(crate) fn krate(&self) -> Path {
        self.krate
            .clone()
            .unwrap_or_else(|| syn::parse_quote!(::goondan_runtime))
    }

    /// Reads the arguments of `#[tool(...)]`.
    pub(crate) fn parse(cx: &Ctxt, tokens: TokenStream) -> Self {
        let mut attr = ToolAttr::default();
        for (key, value, _) in parse_args(cx, tokens, TOOL_KEYS) {
            attr.name_given |= key == NAME;
            let Some(value) = value else { continue };
            match key.as_str() {
                NAME => attr.name = lit_str(cx, NAME, value),
                DESCRIPTION => attr.description = lit_str(cx, DESCRIPTION, value),
                ERROR_MESSAGE_LIMIT => {
                    attr.error_message_limit = lit_int(cx, ERROR_MESSAGE_LIMIT, value);
                }
                _ => attr.krate = path(cx, value),
            }
        }
        attr
    }
}

/// The arguments of `#[tool_input(crate = path)]`: where the runtime is, `::goondan_runtime`
/// when not given.
pub(crate) fn tool_input_crate(cx: &Ctxt, tokens: TokenStream) -> Path {
    let mut krate = None;
    for (_, value, _) in parse_args(cx, tokens, TOOL_INPUT_KEYS) {
        if let Some(value) = value {
            krate = path(cx, value);
        }
    }
    krate.unwrap_or_else(|| syn::parse_quote!(::goondan_runtime))
}

impl ExportAttr {
    fn parse(cx: &Ctxt, tokens: TokenStream) -> Self {
        let mut attr = ExportAttr::default();
        for (key, value, ident) in parse_args(cx, tokens, EXPORT_KEYS) {
            match key.as_str() {
                READ_ONLY => attr.read_only = flag(cx, READ_ONLY, value),
                DESTRUCTIVE => attr.destructive = flag(cx, DESTRUCTIVE, value),
                IDEMPOTENT => attr.idempotent = flag(cx, IDEMPOTENT, value),
                OPEN_WORLD => attr.open_world = flag(cx, OPEN_WORLD, value),
                OUTPUT_SCHEMA => {
                    if flag(cx, OUTPUT_SCHEMA, value) == Some(true) {
                        attr.output_schema = Some(ident);
                    }
                }
                _ => {
                    let Some(value) = value else { continue };
                    match key.as_str() {
                        NAME => attr.name = lit_str(cx, NAME, value),
                        DESCRIPTION => attr.description = lit_str(cx, DESCRIPTION, value),
                        INPUT => attr.input = lit_str(cx, INPUT, value),
                        TITLE => attr.title = lit_str(cx, TITLE, value),
                        TASK_SUPPORT => attr.task_support = lit_str(cx, TASK_SUPPORT, value),
                        UI => attr.ui = lit_str(cx, UI, value),
                        VISIBILITY => attr.visibility = lit_str(cx, VISIBILITY, value),
                        _ => attr.timeout_ms = lit_int(cx, TIMEOUT_MS, value),
                    }
                }
            }
        }
        attr
    }
}

/// Whether `attr` is `#[export(...)]`.
pub(crate) fn is_export(attr: &Attribute) -> bool {
    attr.path().is_ident(EXPORT_ATTR)
}

/// Removes every `#[export(...)]` from `attrs` and reads it. A second one is an error.
pub(crate) fn take_export(cx: &Ctxt, attrs: &mut Vec<Attribute>) -> Option<ExportAttr> {
    let mut found: Option<ExportAttr> = None;
    for attr in attrs.extract_if(.., |a| is_export(a)) {
        if found.is_some() {
            cx.error_spanned_by(
                &attr,
                "duplicate `#[export]` attribute; merge them into one",
            );
            continue;
        }
        found = Some(match attr.meta {
            Meta::Path(_) => ExportAttr::default(),
            Meta::List(list) => ExportAttr::parse(cx, list.tokens),
            Meta::NameValue(nv) => {
                cx.error_spanned_by(
                    &nv,
                    "expected `#[export(name = \"...\", description = \"...\", timeout_ms = N, \
                     input = \"whole\", title = \"...\", read_only, destructive, idempotent, \
                     open_world, output_schema, task_support = \"optional\", \
                     ui = \"ui://...\", visibility = \"app\")]`",
                );
                ExportAttr::default()
            }
        });
    }
    found
}

/// The text of the doc comments in `attrs`: each line trimmed, blank lines at both ends
/// dropped, lines joined with `\n`. `None` when there is no text.
pub(crate) fn docs(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) = &nv.value
        {
            let value = lit.value();
            lines.extend(value.split('\n').map(|l| l.trim().to_owned()));
        }
    }
    let first = lines.iter().position(|l| !l.is_empty())?;
    let last = lines.iter().rposition(|l| !l.is_empty())?;
    Some(lines[first..=last].join("\n"))
}

/// Whether `attr` belongs on the generated input field rather than on the function parameter:
/// doc comments, `#[serde(...)]` and `#[schemars(...)]`.
pub(crate) fn is_field_attr(attr: &Attribute) -> bool {
    let path = attr.path();
    path.is_ident("doc") || path.is_ident("serde") || path.is_ident("schemars")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_are_trimmed_and_keep_paragraphs() {
        let item: syn::ItemFn = syn::parse_quote! {
            ///
            ///  Convert text.
            ///
            /// Keeps  inner  spaces.
            #[doc = ""]
            fn f() {}
        };
        assert_eq!(
            docs(&item.attrs).as_deref(),
            Some("Convert text.\n\nKeeps  inner  spaces.")
        );
        let bare: syn::ItemFn = syn::parse_quote!(
            fn f() {}
        );
        assert_eq!(docs(&bare.attrs), None);
    }

    #[test]
    fn unknown_key_lists_the_expected_ones() {
        assert_eq!(
            unknown_key_message("desc", TOOL_KEYS),
            "unknown argument `desc`; expected one of `name`, `description`, \
             `error_message_limit`, `crate`"
        );
    }

    #[test]
    fn every_problem_of_an_attribute_is_reported() {
        let cx = Ctxt::new();
        let attr = ToolAttr::parse(
            &cx,
            quote::quote!(
                name = 5,
                name = "x",
                colour = "red",
                error_message_limit = "big"
            ),
        );
        assert!(attr.name_given && attr.name.is_none());
        let err = cx.check().err().map(|e| e.into_iter().count());
        assert_eq!(err, Some(4));
    }
}
