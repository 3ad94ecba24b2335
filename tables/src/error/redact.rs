//! Secrets out of error and log text. [`redact`] is the one place that
//! knows what a secret looks like; [`scrub`] applies it to an underlying
//! error and all its sources.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

use super::BoxError;

/// What stands for a removed secret.
const REDACTED: &str = "REDACTED";

/// The query parameters of a shared access signature (account, service,
/// table and user delegation SAS): the signature, and what it grants.
const SAS_PARAMETERS: &[&str] = &[
    "sig", "sv", "ss", "srt", "sp", "se", "st", "spr", "sip", "si", "sr", "sdd", "skoid", "sktid", "skt", "ske", "sks",
    "skv", "saoid", "suoid", "scid", "sduoid", "ses", "rscc", "rscd", "rsce", "rscl", "rsct", "tn", "spk", "srk",
    "epk", "erk",
];

/// Connection-string settings whose value is a secret, up to the next `;`.
const SECRET_SETTINGS: &[&str] = &["accountkey", "sharedaccesssignature"];

/// Authorization schemes whose credential follows a space: the whole
/// credential (`Bearer`), or what follows the `account:` (`SharedKey`).
/// The shortest bearer token redacted (JSON web tokens are far longer).
const MIN_TOKEN: usize = 16;

const SCHEMES: &[(&str, bool)] = &[("bearer ", false), ("sharedkeylite ", true), ("sharedkey ", true)];

/// `text` with its secrets replaced by `REDACTED`: the value of every query
/// parameter of a shared access signature (`sig`, `sv`, `se`, `sp`, ...),
/// the value of `AccountKey=` and `SharedAccessSignature=` settings, bearer
/// tokens and Shared Key signatures. Hosts, paths and other parameters stay.
/// Every error and log line of this crate that may hold a URL or an
/// underlying error's text passes through it.
///
/// ```
/// use unified_tables::redact;
/// assert_eq!(
///     redact("error sending request for url (http://h/acct/Tables?sv=2020-08-04&sp=rw&sig=SECRET%3D&comp=list)"),
///     "error sending request for url (http://h/acct/Tables?sv=REDACTED&sp=REDACTED&sig=REDACTED&comp=list)"
/// );
/// assert_eq!(redact("Authorization: Bearer eyJ0eXAiOiJKV1Qi.e30.c2ln"), "Authorization: Bearer REDACTED");
/// assert_eq!(redact("AccountName=a;AccountKey=a2V5;"), "AccountName=a;AccountKey=REDACTED;");
/// assert_eq!(redact("nothing to hide"), "nothing to hide");
/// ```
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let boundary = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '%' | '$')));
        let keep = if boundary { secret_at(rest) } else { None };
        match keep {
            Some((kept, secret)) if secret > 0 => {
                out.push_str(&text[copied..at + kept]);
                out.push_str(REDACTED);
                at += kept + secret;
                copied = at;
            }
            _ => at += rest.chars().next().map_or(1, char::len_utf8),
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// When `rest` starts with a secret: how many bytes to keep before it (its
/// name) and how long the secret is.
fn secret_at(rest: &str) -> Option<(usize, usize)> {
    let lower = |n: usize| rest.get(..n).map(str::to_ascii_lowercase);
    if let Some(eq) = rest.find('=').filter(|&eq| eq <= 24) {
        let name = rest[..eq].to_ascii_lowercase();
        if SAS_PARAMETERS.contains(&name.as_str()) {
            return Some((eq + 1, value_len(&rest[eq + 1..], "&#;,")));
        }
        if SECRET_SETTINGS.contains(&name.as_str()) {
            return Some((eq + 1, value_len(&rest[eq + 1..], ";")));
        }
    }
    for &(scheme, after_colon) in SCHEMES {
        if lower(scheme.len()).as_deref() == Some(scheme) {
            let credential = &rest[scheme.len()..];
            let skip = match after_colon {
                true => credential.find(':').filter(|&c| c < value_len(credential, ""))? + 1,
                false => 0,
            };
            let secret = value_len(&credential[skip..], ",;");
            // A bearer token is long; "bearer token" in prose is not one.
            return (after_colon || secret >= MIN_TOKEN).then_some((scheme.len() + skip, secret));
        }
    }
    None
}

/// The length of a value that ends at whitespace, a quote, a bracket or one of `stops`.
fn value_len(value: &str, stops: &str) -> usize {
    value
        .find(|c: char| c.is_whitespace() || "\"'`()<>[]{}".contains(c) || stops.contains(c))
        .unwrap_or(value.len())
}

/// Whether `text` is unchanged by [`redact`].
fn clean(text: &str) -> bool {
    redact(text) == text
}

/// `error` itself when neither its text, its `Debug` form nor any of its
/// sources' text holds a secret (so it can still be downcast); else a copy
/// of its chain's text with the secrets redacted.
pub(crate) fn scrub(error: BoxError) -> BoxError {
    let mut chain = Some(&*error as &(dyn StdError + 'static));
    let mut is_clean = clean(&format!("{error:?}"));
    while let (true, Some(e)) = (is_clean, chain) {
        is_clean = clean(&e.to_string());
        chain = e.source();
    }
    if is_clean {
        return error;
    }
    Box::new(Redacted::of(&*error))
}

/// An error's text and its sources' text, secrets redacted.
struct Redacted {
    text: String,
    source: Option<Box<Redacted>>,
}

impl Redacted {
    fn of(error: &(dyn StdError + 'static)) -> Redacted {
        let text = error.to_string();
        match error.source() {
            // A layer that prints its source as its own text is left out: each cause once.
            Some(source) if source.to_string() == text => Redacted::of(source),
            source => Redacted {
                text: redact(&text).into_owned(),
                source: source.map(|s| Box::new(Redacted::of(s))),
            },
        }
    }
}

impl fmt::Display for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redacted")
            .field("text", &self.text)
            .field("source", &self.source)
            .finish()
    }
}

impl StdError for Redacted {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|s| s as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sas_parameter_and_key_is_redacted() {
        let url = "http://127.0.0.1:9/devstoreaccount1/Tables?sv=2020-08-04&ss=t&srt=sco&sp=rwdlacu&se=2030-01-01T00%3A00%3A00Z&st=x&spr=https&sig=SECRETSIG123%3D&$top=5";
        let r = redact(url);
        assert!(!r.contains("SECRETSIG123"), "{r}");
        assert!(
            !r.contains("rwdlacu") && !r.contains("2020-08-04") && !r.contains("2030"),
            "{r}"
        );
        assert!(
            r.starts_with("http://127.0.0.1:9/devstoreaccount1/Tables?sv=REDACTED&"),
            "{r}"
        );
        assert!(r.ends_with("&$top=5"), "the non-secret parameters stay: {r}");
        // A SAS on its own, in any case, and `sig` first.
        assert_eq!(redact("SIG=abc&SV=1"), "SIG=REDACTED&SV=REDACTED");
        assert_eq!(redact("token: sig=abc"), "token: sig=REDACTED");
        assert_eq!(
            redact("SharedAccessSignature=sv=1&sig=x;TableEndpoint=https://a"),
            "SharedAccessSignature=REDACTED;TableEndpoint=https://a"
        );
        assert_eq!(
            redact("Authorization: SharedKey devstoreaccount1:c2lnbmF0dXJl"),
            "Authorization: SharedKey devstoreaccount1:REDACTED"
        );
        assert_eq!(redact("bearer abc.def-ghi_jkl-mno"), "bearer REDACTED");
        assert_eq!(redact("failed to get bearer token"), "failed to get bearer token");
        // Words that only look alike stay.
        for text in [
            "design=x",
            "comp=metadata&restype=account",
            "the request timed out",
            "$select=a,b",
            "é sig",
        ] {
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn a_source_with_a_secret_is_replaced_by_its_redacted_text() {
        #[derive(Debug)]
        struct Leaky(&'static str, Option<Box<Leaky>>);
        impl fmt::Display for Leaky {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }
        impl StdError for Leaky {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                self.1.as_deref().map(|s| s as _)
            }
        }
        let clean = scrub(Box::new(Leaky("refused", None)));
        assert!(clean.downcast_ref::<Leaky>().is_some(), "a clean error is kept");
        let scrubbed = scrub(Box::new(Leaky("outer", Some(Box::new(Leaky("at ?sig=S3CRET", None))))));
        assert!(scrubbed.downcast_ref::<Leaky>().is_none());
        assert_eq!(scrubbed.to_string(), "outer");
        assert_eq!(scrubbed.source().unwrap().to_string(), "at ?sig=REDACTED");
        assert!(!format!("{scrubbed:?}").contains("S3CRET"));
    }
}
