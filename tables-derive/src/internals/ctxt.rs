//! Collects every error so the user sees all of them at once.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

use super::docs::{with_link, Page};

/// An error sink. Every error is reported on its own span, with a link to
/// the documentation of the attribute it names.
pub(crate) struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
    page: Page,
}

impl Ctxt {
    /// A sink for the errors of a derive documented on `page`.
    pub(crate) fn new(page: Page) -> Ctxt {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
            page,
        }
    }

    /// Records an error spanning `tokens`.
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        let message = with_link(self.page, &message.to_string());
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records a `syn` error (each of its messages, on its span).
    pub(crate) fn syn_error(&self, err: syn::Error) {
        for e in err {
            self.push(syn::Error::new(e.span(), with_link(self.page, &e.to_string())));
        }
    }

    fn push(&self, err: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(err);
        }
    }

    /// Whether an error has been recorded so far.
    pub(crate) fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Ends collection: `Err` with all errors combined, if any.
    pub(crate) fn check(self) -> syn::Result<()> {
        let mut errors = self.errors.borrow_mut().take().unwrap_or_default().into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}
