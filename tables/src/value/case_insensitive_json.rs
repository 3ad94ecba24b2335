//! Reading JSON whose member names may differ from the expected ones only
//! in letter case, as the .NET library reads its JSON cells
//! (`PropertyNameCaseInsensitive`): `{"city":..}` fills a member serde calls
//! `City`, and the reverse.
//!
//! serde has no case-insensitive mode, so the deserializer is wrapped: where
//! serde asks for a struct (or an enum) it names the members (or variants) it
//! expects, and a JSON member name that matches none of them exactly is
//! handed over as the first expected name equal to it ignoring case. An
//! exact match always wins; names that match nothing are left as they are
//! (ignored, or refused by `deny_unknown_fields`). Map keys are never
//! renamed. The wrapper reads the text in one pass, like `serde_json::from_str`.
//!
//! Where serde does not name the members, names match exactly: structs
//! with a `#[serde(flatten)]` member, and the contents of untagged and
//! internally tagged enums (serde buffers those before it knows the type).

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, Visitor};

/// Parses `text` as `T`, matching struct members and enum variants in any
/// letter case (see the [module](self)).
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = T::deserialize(AnyCase(&mut de))?;
    de.end()?;
    Ok(value)
}

/// Parses UTF-8 `bytes` as `T`, matching names in any letter case.
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(AnyCase(&mut de))?;
    de.end()?;
    Ok(value)
}

/// The expected name equal to `found` ignoring case, when `found` is not
/// itself expected; the first one declared when several are.
fn resolve(found: &str, expected: &'static [&'static str]) -> Option<&'static str> {
    if expected.contains(&found) {
        return None;
    }
    expected.iter().copied().find(|name| same_ignoring_case(name, found))
}

fn same_ignoring_case(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

/// A deserializer whose structs and enums match names in any case.
struct AnyCase<D>(D);

/// A visitor that passes the containers it is given on wrapped.
struct Visit<V> {
    inner: V,
    /// The member names of a struct, or the variant names of an enum.
    names: Option<&'static [&'static str]>,
}

impl<V> Visit<V> {
    fn plain(inner: V) -> Visit<V> {
        Visit { inner, names: None }
    }

    fn named(inner: V, names: &'static [&'static str]) -> Visit<V> {
        Visit {
            inner,
            names: Some(names),
        }
    }
}

/// `fn $method(self, visitor)` forwarding to `self.$field` with the visitor
/// passed through `$wrap`, for each listed method.
macro_rules! forward_deserialize {
    ($field:tt, $wrap:path; $($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.$field.$method($wrap(visitor))
        }
    )*};
}

/// The forwarding methods both deserializers share: every method but those
/// of strings and identifiers, the visitor passed through `$wrap`, or through
/// `$named` with the member or variant names for structs and enums.
macro_rules! forward_common {
    ($field:tt, $wrap:path, $named:path) => {
        forward_deserialize!(
            $field, $wrap;
            deserialize_any,
            deserialize_bool,
            deserialize_i8,
            deserialize_i16,
            deserialize_i32,
            deserialize_i64,
            deserialize_i128,
            deserialize_u8,
            deserialize_u16,
            deserialize_u32,
            deserialize_u64,
            deserialize_u128,
            deserialize_f32,
            deserialize_f64,
            deserialize_char,
            deserialize_bytes,
            deserialize_byte_buf,
            deserialize_option,
            deserialize_unit,
            deserialize_seq,
            deserialize_map,
            deserialize_ignored_any,
        );

        fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_unit_struct(name, $wrap(visitor))
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_newtype_struct(name, $wrap(visitor))
        }

        fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_tuple(len, $wrap(visitor))
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_tuple_struct(name, len, $wrap(visitor))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_struct(name, fields, $named(visitor, fields))
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_enum(name, variants, $named(visitor, variants))
        }

        fn is_human_readable(&self) -> bool {
            self.$field.is_human_readable()
        }
    };
}

/// The visitor as it is (for name deserializers, whose values are not containers).
fn unwrapped<V>(visitor: V) -> V {
    visitor
}

/// [`unwrapped`], for the methods that name members or variants.
fn unwrapped_named<V>(visitor: V, _names: &'static [&'static str]) -> V {
    visitor
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for AnyCase<D> {
    type Error = D::Error;

    forward_common!(0, Visit::plain, Visit::named);
    forward_deserialize!(0, Visit::plain; deserialize_str, deserialize_string, deserialize_identifier);
}

macro_rules! forward_visit {
    ($($method:ident($t:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $t) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Visit<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(AnyCase(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(AnyCase(deserializer))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(Seq(seq))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(Map { map, names: self.names })
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(Enum {
            data,
            names: self.names,
        })
    }
}

/// A seed whose deserializer is wrapped.
struct Seed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(AnyCase(deserializer))
    }
}

struct Seq<A>(A);

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for Seq<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

struct Map<A> {
    map: A,
    names: Option<&'static [&'static str]>,
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Map<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        match self.names {
            Some(names) => self.map.next_key_seed(NameSeed { seed, names }),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(Seed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

struct Enum<A> {
    data: A,
    names: Option<&'static [&'static str]>,
}

impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for Enum<A> {
    type Error = A::Error;
    type Variant = Variant<A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = match self.names {
            Some(names) => self.data.variant_seed(NameSeed { seed, names })?,
            None => self.data.variant_seed(seed)?,
        };
        Ok((value, Variant(variant)))
    }
}

struct Variant<A>(A);

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for Variant<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Visit::plain(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Visit::named(visitor, fields))
    }
}

/// The seed of a member or variant name: the name is resolved against the
/// expected ones before the inner seed sees it.
struct NameSeed<S> {
    seed: S,
    names: &'static [&'static str],
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for NameSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(NameDe {
            inner: deserializer,
            names: self.names,
        })
    }
}

/// The deserializer of one member or variant name.
struct NameDe<D> {
    inner: D,
    names: &'static [&'static str],
}

/// `fn $method(self, visitor)` forwarding to the inner deserializer with
/// the visitor wrapped in [`Rename`].
macro_rules! forward_renamed {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            let names = self.names;
            self.inner.$method(Rename { inner: visitor, names })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for NameDe<D> {
    type Error = D::Error;

    // Names come as identifiers, or as strings to hand-written visitors.
    forward_renamed!(deserialize_identifier, deserialize_str, deserialize_string);
    forward_common!(inner, unwrapped, unwrapped_named);
}

/// A visitor of a name that hands over the expected spelling.
struct Rename<V> {
    inner: V,
    names: &'static [&'static str],
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Rename<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        match resolve(v, self.names) {
            Some(name) => self.inner.visit_borrowed_str(name),
            None => self.inner.visit_str(v),
        }
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        match resolve(v, self.names) {
            Some(name) => self.inner.visit_borrowed_str(name),
            None => self.inner.visit_borrowed_str(v),
        }
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        match resolve(&v, self.names) {
            Some(name) => self.inner.visit_borrowed_str(name),
            None => self.inner.visit_string(v),
        }
    }

    forward_visit!(
        visit_bool(bool),
        visit_i64(i64),
        visit_u64(u64),
        visit_f64(f64),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, PartialEq, Deserialize, Serialize)]
    #[serde(rename_all = "PascalCase")]
    struct Address {
        city: String,
        zip_code: Option<String>,
        geo: Option<Geo>,
        tags: Vec<Tag>,
        kind: Option<Kind>,
        by_name: BTreeMap<String, Geo>,
    }

    #[derive(Debug, PartialEq, Deserialize, Serialize)]
    struct Geo {
        lat: f64,
        #[serde(alias = "longitude")]
        lng: f64,
    }

    #[derive(Debug, PartialEq, Deserialize, Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Tag {
        tag_name: String,
    }

    #[derive(Debug, PartialEq, Deserialize, Serialize)]
    enum Kind {
        Home,
        Work { floor: u32 },
    }

    #[test]
    fn members_and_variants_match_in_any_case() {
        let json = r#"{"city":"Lviv","zipCode":"79000","GEO":{"Lat":49.8,"LNG":24.0},
            "tags":[{"TagName":"a"},{"tagname":"b"}],"kind":"home",
            "byName":{"Office":{"lat":1,"Longitude":2}}}"#;
        let a: Address = from_str(json).unwrap();
        assert_eq!(a.city, "Lviv");
        assert_eq!(a.zip_code.as_deref(), Some("79000"));
        assert_eq!(a.geo, Some(Geo { lat: 49.8, lng: 24.0 }));
        assert_eq!(
            a.tags.iter().map(|t| t.tag_name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(a.kind, Some(Kind::Home));
        let office = &a.by_name["Office"];
        assert_eq!(
            (office.lat, office.lng),
            (1.0, 2.0),
            "map keys stay, the values' members match"
        );
        let work: Kind = from_str(r#"{"WORK":{"FLOOR":3}}"#).unwrap();
        assert_eq!(work, Kind::Work { floor: 3 });
        assert_eq!(from_slice::<Kind>(br#""hOmE""#).unwrap(), Kind::Home);
    }

    #[test]
    fn exact_names_win_and_two_casings_of_one_member_are_an_error() {
        #[derive(Debug, Deserialize)]
        struct Two {
            #[serde(rename = "name")]
            lower: Option<String>,
            #[serde(rename = "Name")]
            upper: Option<String>,
        }
        let two: Two = from_str(r#"{"Name":"U","name":"l"}"#).unwrap();
        assert_eq!((two.lower.as_deref(), two.upper.as_deref()), (Some("l"), Some("U")));
        let first: Two = from_str(r#"{"NAME":"x"}"#).unwrap();
        assert_eq!(
            (first.lower.as_deref(), first.upper),
            (Some("x"), None),
            "the first declared name"
        );
        let err = from_str::<Geo>(r#"{"lat":1,"Lat":2,"lng":3}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate field `lat`"), "{err}");
    }

    #[test]
    fn unknown_members_are_left_to_serde() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Strict {
            #[allow(dead_code)]
            a: u8,
        }
        assert!(from_str::<Strict>(r#"{"A":1}"#).is_ok());
        assert!(from_str::<Strict>(r#"{"A":1,"b":2}"#).is_err());
        assert!(
            from_str::<Geo>(r#"{"lat":1,"lng":2} x"#).is_err(),
            "trailing text is refused"
        );
        let v: serde_json::Value = from_str(r#"{"A":[1,{"b":null}]}"#).unwrap();
        assert_eq!(v, serde_json::json!({"A":[1,{"b":null}]}));
        let same: Geo = from_str(r#"{"lat":1e0,"lng":-0.5}"#).unwrap();
        assert_eq!(same, serde_json::from_str::<Geo>(r#"{"lat":1e0,"lng":-0.5}"#).unwrap());
    }

    #[test]
    fn only_letter_case_is_ignored_and_only_where_serde_names_the_members() {
        #[derive(Debug, Deserialize)]
        struct Snake {
            zip_code: Option<String>,
        }
        assert_eq!(from_str::<Snake>(r#"{"zipCode":"1"}"#).unwrap().zip_code, None);
        assert_eq!(
            from_str::<Snake>(r#"{"ZIP_CODE":"1"}"#).unwrap().zip_code.as_deref(),
            Some("1")
        );

        #[derive(Debug, Deserialize)]
        struct Flattened {
            city: Option<String>,
            #[serde(flatten)]
            rest: BTreeMap<String, serde_json::Value>,
        }
        let f: Flattened = from_str(r#"{"City":"Lviv"}"#).unwrap();
        assert_eq!(
            (f.city, f.rest.len()),
            (None, 1),
            "a struct with a flatten member matches exactly"
        );

        #[derive(Debug, Deserialize)]
        #[serde(tag = "type")]
        enum Tagged {
            Home { city: Option<String> },
        }
        let Tagged::Home { city } = from_str(r#"{"type":"Home","City":"Lviv"}"#).unwrap();
        assert_eq!(city, None, "an internally tagged enum's content matches exactly");
    }
}
