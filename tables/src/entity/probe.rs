//! Compile-time probes the derive's generated code uses.

/// Lets generated code find `Clone::clone` for a type that is `Clone` and
/// `None` for one that is not, decided at compile time by method resolution
/// (`(&&CloneProbe::<T>::new()).cloner()`).
#[doc(hidden)]
#[derive(Debug)]
pub struct CloneProbe<T>(core::marker::PhantomData<fn() -> T>);

impl<T> CloneProbe<T> {
    /// The probe of `T`.
    pub const fn new() -> Self {
        CloneProbe(core::marker::PhantomData)
    }
}

impl<T> Default for CloneProbe<T> {
    fn default() -> Self {
        CloneProbe::new()
    }
}

/// The `Clone` arm of [`CloneProbe`].
#[doc(hidden)]
pub trait ProbeClone<T> {
    /// `Clone::clone` of `T`.
    fn cloner(&self) -> Option<fn(&T) -> T>;
}

impl<T: Clone> ProbeClone<T> for &CloneProbe<T> {
    fn cloner(&self) -> Option<fn(&T) -> T> {
        Some(T::clone)
    }
}

/// The fallback arm of [`CloneProbe`]: `T` is not `Clone`.
#[doc(hidden)]
pub trait ProbeNoClone<T> {
    /// No way to copy a `T`.
    fn cloner(&self) -> Option<fn(&T) -> T>;
}

impl<T> ProbeNoClone<T> for CloneProbe<T> {
    fn cloner(&self) -> Option<fn(&T) -> T> {
        None
    }
}
