//! The crate's named streams: a type per stream (`EntityStream`,
//! `IndexStream`, `UnionStream`, `BlobContentStream`, `BuildSteps`,
//! `ConvergeSteps`) with inherent `next` and `try_next`, so a caller polls
//! it in place without importing a stream trait, and a [`futures::Stream`]
//! for combinators.

/// Defines a named stream of `Result<Item>`: the struct (holding a boxed
/// stream), `Debug`, `futures::Stream`, a crate-private `new`, and the
/// inherent `next` and `try_next`; `$what` names one item in their docs.
macro_rules! named_stream {
    ($(#[$doc:meta])* $name:ident $(<$t:ident>)?, $item:ty, $what:literal) => {
        $(#[$doc])*
        #[must_use = "a stream reads nothing until it is polled"]
        pub struct $name $(<$t>)? {
            inner: ::std::pin::Pin<Box<dyn ::futures::Stream<Item = $crate::Result<$item>> + Send>>,
        }

        impl $(<$t>)? ::std::fmt::Debug for $name $(<$t>)? {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }

        impl $(<$t>)? ::futures::Stream for $name $(<$t>)? {
            type Item = $crate::Result<$item>;

            fn poll_next(
                mut self: ::std::pin::Pin<&mut Self>,
                cx: &mut ::std::task::Context<'_>,
            ) -> ::std::task::Poll<Option<$crate::Result<$item>>> {
                self.inner.as_mut().poll_next(cx)
            }
        }

        impl $(<$t>)? $name $(<$t>)? {
            pub(crate) fn new(inner: impl ::futures::Stream<Item = $crate::Result<$item>> + Send + 'static) -> Self {
                $name { inner: Box::pin(inner) }
            }

            #[doc = concat!("The next ", $what, ", an error (after which the stream ends), or `None` at the end.")]
            #[allow(clippy::should_implement_trait)]
            pub async fn next(&mut self) -> Option<$crate::Result<$item>> {
                ::futures::StreamExt::next(&mut self.inner).await
            }

            #[doc = concat!("The next ", $what, ", `Ok(None)` at the end: `while let Some(x) = s.try_next().await? { .. }`.")]
            pub async fn try_next(&mut self) -> $crate::Result<Option<$item>> {
                self.next().await.transpose()
            }
        }
    };
}

pub(crate) use named_stream;
