//! Normalization, validation and the keys of user text.

use super::types::invalid;
use super::IdentityResult;
use crate::layout::{identity_pair_key, identity_text_key};

/// The longest user name, email, role name, provider or token name: 256 characters.
pub(super) const MAX_NAME_CHARS: usize = 256;

/// A name as compared for uniqueness: upper-cased with Unicode's case
/// mapping (so `alice`, `Alice` and `ALICE` are one name).
pub(super) fn normalize(text: &str) -> String {
    text.to_uppercase()
}

/// Checks a user-typed name: not empty, not only spaces, at most 256
/// characters, no control characters.
pub(super) fn check_name(field: &'static str, text: &str) -> IdentityResult<()> {
    if text.trim().is_empty() {
        return Err(invalid(
            field,
            "is empty: give at least one character that is not a space",
        ));
    }
    if text.chars().count() > MAX_NAME_CHARS {
        return Err(invalid(field, format!("is longer than {MAX_NAME_CHARS} characters")));
    }
    if text.chars().any(char::is_control) {
        return Err(invalid(field, "holds a control character: remove it"));
    }
    Ok(())
}

/// Checks an email address: a name, and `@` with text on both sides.
pub(super) fn check_email(email: &str) -> IdentityResult<()> {
    check_name("email", email)?;
    match email.rsplit_once('@') {
        Some((local, domain)) if !local.is_empty() && !domain.is_empty() && !email.contains(char::is_whitespace) => {
            Ok(())
        }
        _ => Err(invalid(
            "email",
            "is not an email address: expected `name@domain` without spaces",
        )),
    }
}

/// Checks a password: not empty (its strength is the application's policy).
pub(super) fn check_password(password: &str) -> IdentityResult<()> {
    if password.is_empty() {
        return Err(invalid("password", "is empty"));
    }
    Ok(())
}

/// The partition of a user: the hash of the normalized user name.
pub(super) fn user_partition(normalized_user_name: &str) -> String {
    identity_text_key(normalized_user_name)
}

/// The row key of a role: the hash of its normalized name.
pub(super) fn role_key(normalized_role_name: &str) -> String {
    identity_text_key(normalized_role_name)
}

/// The row key of a claim: the pair key of type and value.
pub(super) fn claim_key(claim_type: &str, value: &str) -> String {
    identity_pair_key(claim_type, value)
}

/// The partition of a login: the pair key of provider and provider key.
pub(super) fn login_partition(provider: &str, provider_key: &str) -> String {
    identity_pair_key(provider, provider_key)
}

/// The row key of a token: the pair key of provider and name.
pub(super) fn token_key(provider: &str, name: &str) -> String {
    identity_pair_key(provider, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::validate_key;
    use crate::KeyKind;

    #[test]
    fn hostile_text_makes_valid_keys() {
        for text in [
            "a/b\\c#d?e",
            "\u{0}\u{1f}\u{7f}\u{9f}",
            "' or 1 eq 1 or '",
            "",
            "ß",
            &"x".repeat(5000),
        ] {
            for key in [user_partition(text), claim_key(text, text), login_partition(text, "k")] {
                assert_eq!(key.len(), 64);
                assert!(validate_key(KeyKind::PartitionKey, &key).is_ok(), "{key}");
            }
        }
    }

    #[test]
    fn pairs_do_not_meet() {
        assert_ne!(claim_key("ab", "c"), claim_key("a", "bc"));
        assert_ne!(claim_key("a:", "b"), claim_key("a", ":b"));
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("user_name", "alice").is_ok());
        assert!(check_name("user_name", "  ").is_err());
        assert!(check_name("user_name", "a\nb").is_err());
        assert!(check_name("user_name", &"a".repeat(257)).is_err());
        assert!(check_email("a@b").is_ok());
        assert!(check_email("ab").is_err());
        assert!(check_email("a b@c").is_err());
        assert!(check_email("@c").is_err());
        assert_eq!(normalize("Alice"), "ALICE");
    }
}
