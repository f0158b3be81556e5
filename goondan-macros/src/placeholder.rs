//! What to emit when `#[tool]` cannot read the item at all (a syntax error `syn` refuses, a
//! module without a body): the item as written, plus the `TOOL` the user's code refers to, so
//! that one mistake gives one error instead of a second "cannot find `TOOL`".
//!
//! It works on tokens, since there is no parsed item: it finds the item's keyword (`mod`,
//! `fn`) and name at the top level and adds a `TOOL` whose build never runs, since the crate
//! does not compile. Should rustc ever accept an item `syn` cannot read, the crate compiles and
//! building that `TOOL` fails with "no exports" (an error, never a panic).

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::Path;

use crate::expand::static_tool;

/// `item`, with a placeholder `TOOL` where the user's code expects one: inside `mod name
/// { ... }` (and instead of the `;` of `mod name;`, which cannot work in a macro input), and
/// as `name::TOOL` next to a lone `fn name`. Anything else comes back as written.
pub(crate) fn placeholder(krate: &Path, name: &str, item: TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    let keyword = tokens
        .iter()
        .position(|tt| matches!(tt, TokenTree::Ident(i) if i == "mod" || i == "fn"));
    let (Some(at), Some(TokenTree::Ident(ident))) =
        (keyword, keyword.and_then(|k| tokens.get(k + 1)))
    else {
        return tokens.into_iter().collect();
    };
    let tool = tool_const(krate, name);
    if matches!(&tokens[at], TokenTree::Ident(i) if i == "mod") {
        let mut out: Vec<TokenTree> = tokens[..at + 2].to_vec();
        let body = match tokens.get(at + 2) {
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                let mut body = g.stream();
                body.extend(tool);
                let mut group = Group::new(Delimiter::Brace, body);
                group.set_span(g.span());
                group
            }
            _ => Group::new(Delimiter::Brace, tool),
        };
        out.push(TokenTree::Group(body));
        out.extend(
            tokens
                .iter()
                .skip(at + 3)
                .filter(|tt| !is_semi(tt))
                .cloned(),
        );
        return out.into_iter().collect();
    }
    let vis = visibility(&tokens[..at]);
    let ident = ident.clone();
    let mut out: TokenStream = tokens.into_iter().collect();
    out.extend(quote! {
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #ident {}
        #[allow(dead_code)]
        impl #ident {
            #tool
        }
    });
    out
}

/// `pub const TOOL` named `name` without exports, whose build would fail.
fn tool_const(krate: &Path, name: &str) -> TokenStream {
    let body = quote!(#krate::__private::finish_generated(#krate::__private::Tool::builder(#name)));
    let build = format_ident!("__goondan_placeholder_tool");
    let tool = static_tool(krate, name, &build, &body);
    quote! {
        #[doc(hidden)]
        pub const TOOL: #krate::__private::StaticTool = #tool;
    }
}

/// The `pub`, `pub(crate)`... among the tokens before the keyword.
fn visibility(before: &[TokenTree]) -> TokenStream {
    let Some(at) = before
        .iter()
        .position(|tt| matches!(tt, TokenTree::Ident(i) if i == "pub"))
    else {
        return TokenStream::new();
    };
    let mut vis = vec![before[at].clone()];
    if let Some(TokenTree::Group(g)) = before.get(at + 1)
        && g.delimiter() == Delimiter::Parenthesis
    {
        vis.push(before[at + 1].clone());
    }
    vis.into_iter().collect()
}

fn is_semi(tt: &TokenTree) -> bool {
    matches!(tt, TokenTree::Punct(p) if p.as_char() == ';')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn krate() -> Path {
        syn::parse_quote!(::goondan_runtime)
    }

    #[test]
    fn a_module_without_body_gets_one_with_tool() {
        let out = placeholder(
            &krate(),
            "text-utils",
            quote!(
                pub mod text_utils;
            ),
        )
        .to_string();
        assert!(out.starts_with("pub mod text_utils {"), "{out}");
        assert!(out.contains("pub const TOOL"), "{out}");
        assert!(!out.trim_end().ends_with(';'), "{out}");
    }

    #[test]
    fn a_module_keeps_its_items_and_gains_tool() {
        let out =
            placeholder(&krate(), "t", quote!(mod m { pub fn f() { let x = ; } })).to_string();
        assert!(out.contains("let x = ;"), "{out}");
        assert!(out.contains("pub const TOOL"), "{out}");
    }

    #[test]
    fn a_lone_fn_gets_its_type_twin() {
        let out = placeholder(&krate(), "t", quote!(pub(crate) fn echo() { let = ; })).to_string();
        assert!(out.contains("pub (crate) struct echo { }"), "{out}");
        assert!(out.contains("impl echo"), "{out}");
    }

    #[test]
    fn other_items_come_back_as_written() {
        let item = quote!(
            struct S;
        );
        assert_eq!(
            placeholder(&krate(), "t", item.clone()).to_string(),
            item.to_string()
        );
    }
}
