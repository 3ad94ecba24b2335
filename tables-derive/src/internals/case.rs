//! Field names to column names.

/// `credit_limit` -> `CreditLimit`; a raw identifier loses its `r#`.
pub(crate) fn pascal_case(field: &str) -> String {
    let field = field.strip_prefix("r#").unwrap_or(field);
    let mut out = String::with_capacity(field.len());
    for part in field.split('_').filter(|p| !p.is_empty()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::pascal_case;

    #[test]
    fn converts_snake_case() {
        assert_eq!(pascal_case("credit_limit"), "CreditLimit");
        assert_eq!(pascal_case("name"), "Name");
        assert_eq!(pascal_case("r#type"), "Type");
        assert_eq!(pascal_case("_private"), "Private");
        assert_eq!(pascal_case("a_b_c"), "ABC");
    }
}
