//! `#[tool_input]`: derives `Deserialize` and `JsonSchema` on a struct or enum through the
//! runtime's re-exports of serde and schemars, so the crate that writes it needs neither in
//! its `Cargo.toml` (and never a second, mismatched version of them).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Data, DeriveInput, Path};

use crate::attr;
use crate::ctxt::Ctxt;

/// The item with the two derives and their `crate` paths in front of it. Errors (arguments
/// other than `crate = path`, an item that is not a struct or enum) come with the item as
/// written.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let krate = attr::tool_input_crate(&cx, args);
    let input: DeriveInput = match syn::parse2(item.clone()) {
        Ok(input) => input,
        Err(err) => {
            cx.syn_error(err);
            return with_errors(cx, item);
        }
    };
    if let Data::Union(u) = &input.data {
        cx.error_spanned_by(
            u.union_token,
            "`#[tool_input]` applies to a struct or an enum; a union cannot be deserialised",
        );
    }
    if cx.has_errors() {
        return with_errors(cx, item);
    }
    derives(&krate, &input)
}

/// `#[derive(Deserialize, JsonSchema)]` with `#[serde(crate = "...")]` and
/// `#[schemars(crate = "...")]` pointing into `krate::__private`.
fn derives(krate: &Path, input: &DeriveInput) -> TokenStream {
    let serde_crate = quote!(#krate::__private::serde)
        .to_string()
        .replace(' ', "");
    let schemars_crate = quote!(#krate::__private::schemars)
        .to_string()
        .replace(' ', "");
    let item = input.to_token_stream();
    quote! {
        #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #item
    }
}

fn with_errors(cx: Ctxt, mut tokens: TokenStream) -> TokenStream {
    if let Err(err) = cx.check() {
        tokens.extend(err.to_compile_error());
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derives_name_only_the_runtime() {
        let out = expand(
            TokenStream::new(),
            quote!(
                pub struct CountInput {
                    pub text: String,
                }
            ),
        )
        .to_string();
        assert!(
            out.contains(
                "derive (:: goondan_runtime :: __private :: serde :: Deserialize , \
                 :: goondan_runtime :: __private :: schemars :: JsonSchema)"
            ),
            "{out}"
        );
        assert!(
            out.contains("serde (crate = \"::goondan_runtime::__private::serde\")"),
            "{out}"
        );
        assert!(
            out.contains("schemars (crate = \"::goondan_runtime::__private::schemars\")"),
            "{out}"
        );
        assert!(out.contains("pub struct CountInput"), "{out}");
    }

    #[test]
    fn a_reexporting_crate_sets_the_path() {
        let out = expand(
            quote!(crate = my_sdk::rt),
            quote!(
                enum Mode {
                    Fast,
                    Slow,
                }
            ),
        )
        .to_string();
        assert!(
            out.contains("serde (crate = \"my_sdk::rt::__private::serde\")"),
            "{out}"
        );
    }

    #[test]
    fn a_union_is_refused() {
        let out = expand(TokenStream::new(), quote!(union U { a: u8 })).to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(!out.contains("derive"), "{out}");
    }

    #[test]
    fn an_unknown_argument_is_refused() {
        let out = expand(
            quote!(name = "x"),
            quote!(
                struct S;
            ),
        )
        .to_string();
        assert!(out.contains("unknown argument `name`"), "{out}");
    }
}
