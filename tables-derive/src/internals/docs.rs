//! Where each error's remedy is documented: every derive error ends with a
//! link to the section of the derive's documentation for the attribute it
//! names (the headings of `tables/docs/*.md`, as rustdoc names them).

/// Which derive's documentation an error links to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Page {
    /// `TableEntity`, which also documents the field attributes of records.
    Entity,
    /// `TableEnum`.
    Enum,
    /// `TableUnion`.
    Union,
}

const BASE: &str = "https://docs.rs/unified-tables/latest/unified_tables/";

/// The rustdoc anchor of the section documenting attribute `key`.
fn anchor(key: &str) -> Option<&'static str> {
    Some(match key {
        "table(name" => "tablename--",
        "table(ids" => "tableids--as_written",
        "table(partition_key" | "table(row_key" => "tablepartition_key-and-tablerow_key",
        "table(id" => "tableid",
        "table(rename" => "tablerename--",
        "table(skip" => "tableskip",
        "table(flatten" => "tableflatten",
        "table(json" => "tablejson",
        "table(etag" => "tableetag",
        "table(timestamp" => "tabletimestamp",
        "table(created_at" | "table(updated_at" => "tablecreated_at-and-tableupdated_at",
        "table(split" | "table(offload" => "tablesplit--text--gzip--binary-and-tableoffload--never",
        "alias" => "aliasoldname",
        "protected" => "protectedrolerole",
        "blob_content" => "blob_content",
        "table(soft_delete" => "tablesoft_delete",
        "table(ordering" => "tableordering",
        "index" | "unique" | "table(index" => "index-and-unique",
        _ => return None,
    })
}

/// The attributes a message names, in order: `table(rename` for
/// `#[table(rename = "..")]`, `alias` for `#[alias(..)]`.
fn named_attributes(message: &str) -> impl Iterator<Item = &str> {
    message.split("#[").skip(1).map(|rest| {
        let end = rest
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_lowercase() || c == '_' || (c == '(' && rest[..i] == *"table")))
            .map_or(rest.len(), |(i, _)| i);
        &rest[..end]
    })
}

/// `message`, followed by a link to the documentation of the first
/// attribute it names that has a section (or to the derive's page).
pub(crate) fn with_link(page: Page, message: &str) -> String {
    let section = match page {
        Page::Entity => named_attributes(message).find_map(anchor),
        Page::Enum => named_attributes(message)
            .any(|a| a == "table(rename")
            .then_some("variant-attributes"),
        Page::Union => None,
    };
    let item = match page {
        Page::Entity => "derive.TableEntity.html",
        Page::Enum => "derive.TableEnum.html",
        Page::Union => "derive.TableUnion.html",
    };
    match section {
        Some(section) => format!("{message}\n  see {BASE}{item}#{section}"),
        None => format!("{message}\n  see {BASE}{item}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_documented_attribute_is_linked() {
        let m = with_link(
            Page::Entity,
            "unknown #[table(rowkey)] on a field: did you mean #[table(row_key)]?",
        );
        assert!(
            m.ends_with("derive.TableEntity.html#tablepartition_key-and-tablerow_key"),
            "{m}"
        );
        let m = with_link(
            Page::Entity,
            r#"write the old column name as a string: #[alias("FullName")]"#,
        );
        assert!(m.ends_with("#aliasoldname"), "{m}");
        let m = with_link(Page::Entity, "#[derive(TableEntity)] needs a struct with named fields");
        assert!(m.ends_with("derive.TableEntity.html"), "{m}");
        let m = with_link(
            Page::Enum,
            "unknown #[table(name)] on a variant: did you mean #[table(rename)]?",
        );
        assert!(m.ends_with("derive.TableEnum.html#variant-attributes"), "{m}");
    }
}
