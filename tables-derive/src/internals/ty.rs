//! What the derive can tell from a field's type as written.

use syn::{GenericArgument, PathArguments, Type};

/// The last path segment's name, e.g. `String` for `std::string::String`.
pub(crate) fn last_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Group(g) => last_ident(&g.elem),
        Type::Paren(p) => last_ident(&p.elem),
        _ => None,
    }
}

/// The single generic argument of `Wrapper<T>` when the last segment is `wrapper`.
pub(crate) fn generic_of<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    let Type::Path(p) = ty else { return None };
    let seg = p.path.segments.last()?;
    if seg.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let first = types.next()?;
    types.next().is_none().then_some(first)
}

/// `T` for `Option<T>`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    generic_of(ty, "Option")
}

/// Whether the type is `Vec<u8>`.
pub(crate) fn is_bytes(ty: &Type) -> bool {
    generic_of(ty, "Vec").and_then(last_ident).is_some_and(|i| i == "u8")
}

/// Whether the type is a `String`.
pub(crate) fn is_string(ty: &Type) -> bool {
    last_ident(ty).is_some_and(|i| i == "String") && generic_of(ty, "String").is_none()
}

/// Whether the type is written as a scalar with a native cell (so it cannot be split).
pub(crate) fn is_known_scalar(ty: &Type) -> bool {
    if let Type::Reference(_) = ty {
        return false;
    }
    matches!(
        last_ident(ty).as_deref(),
        Some(
            "bool"
                | "char"
                | "i8"
                | "i16"
                | "i32"
                | "i64"
                | "isize"
                | "u8"
                | "u16"
                | "u32"
                | "u64"
                | "usize"
                | "f32"
                | "f64"
                | "DateTime"
                | "SystemTime"
                | "OffsetDateTime"
                | "Guid"
                | "Uuid"
                | "Decimal"
        )
    )
}

/// Whether the type is `BlobContent` or `Option<BlobContent>`.
pub(crate) fn is_blob_content(ty: &Type) -> bool {
    let inner = option_inner(ty).unwrap_or(ty);
    last_ident(inner).is_some_and(|i| i == "BlobContent")
}

/// Whether the type is `Option<ETag>`.
pub(crate) fn is_option_etag(ty: &Type) -> bool {
    option_inner(ty).and_then(last_ident).is_some_and(|i| i == "ETag")
}
