//! Collects every error found while reading and checking one `#[tool]` item, so the user sees
//! all of them in one compile (like the `Ctxt` of `serde_derive`).

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// The errors of one expansion.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Reports `msg` with the caret on `tokens` (all of them, where the compiler can join
    /// spans; the first token otherwise).
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, msg: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens.into_token_stream(), msg));
    }

    /// Reports `msg` at `span`.
    pub(crate) fn error_at<M: Display>(&self, span: proc_macro2::Span, msg: M) {
        self.errors.borrow_mut().push(syn::Error::new(span, msg));
    }

    /// Reports an error `syn` produced.
    pub(crate) fn syn_error(&self, err: syn::Error) {
        self.errors.borrow_mut().push(err);
    }

    /// Whether anything was reported so far.
    pub(crate) fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// Ends the collection: `Err` with every error combined, in the order they were reported.
    pub(crate) fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}
