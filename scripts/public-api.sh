#!/usr/bin/env bash
# Lists the public surface of the `unified-tables` crate, one item a line, and
# compares it with the checked-in `tables/public-api.txt`.
#
#   scripts/public-api.sh           print the list (all features)
#   scripts/public-api.sh --check   exit 1 with a diff when the list differs from tables/public-api.txt
#   scripts/public-api.sh --bless   rewrite tables/public-api.txt
#
# The list comes from rustdoc's HTML (stable toolchain; no nightly JSON):
# `cargo doc --no-deps --all-features -p unified-tables`, then the module
# tree from each module's index page, every item from `all.html`, and per
# type its public fields, variants and inherent methods, per trait its
# methods. Lines read like `struct unified_tables::store::Store` or
# `method unified_tables::store::Store::get`. Items hidden from the docs
# (`#[doc(hidden)]`, such as `__private`) are not listed.
#
# Every public item has one path: a `pub use` that gives an item of the
# crate a second public path fails the script, naming it.
#
# Set SKIP_DOC=1 to reuse docs already built (scripts/test.sh builds them
# just before with RUSTDOCFLAGS="-D warnings").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=print
case "${1:-}" in
    "") ;;
    --check) mode=check ;;
    --bless) mode=bless ;;
    *)
        echo "usage: scripts/public-api.sh [--check | --bless]" >&2
        exit 2
        ;;
esac

if [[ "${SKIP_DOC:-}" != 1 ]]; then
    cargo doc --quiet --no-deps --all-features -p unified-tables >&2
fi

target_dir="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
doc_dir="$target_dir/doc/unified_tables"
if [[ ! -f "$doc_dir/all.html" ]]; then
    echo "public-api.sh: $doc_dir/all.html is missing; run without SKIP_DOC=1" >&2
    exit 1
fi

list="$(python3 - "$doc_dir" <<'EOF'
import html
import os
import re
import sys

root = sys.argv[1]
crate = "unified_tables"
lines = set()


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def section(page, start_ids, end_ids):
    """The part of a page from the first of start_ids to the first following end_id."""
    starts = [page.find(f'id="{i}"') for i in start_ids]
    starts = [s for s in starts if s >= 0]
    if not starts:
        return ""
    start = min(starts)
    ends = [page.find(f'id="{i}', start + 1) for i in end_ids]
    ends = [e for e in ends if e >= 0]
    return page[start : min(ends) if ends else len(page)]


def members(path, rel):
    """Fields, variants and inherent methods of a type; methods of a trait."""
    page = read(path)
    kind, name = os.path.basename(rel)[: -len(".html")].split(".", 1)
    module = os.path.dirname(rel).replace("/", "::")
    item = "::".join(p for p in (crate, module, name) if p)
    for field in re.findall(r'id="structfield\.([A-Za-z0-9_]+)"', page):
        lines.add(f"field {item}::{field}")
    for variant in re.findall(r'id="variant\.([A-Za-z0-9_]+)"', page):
        lines.add(f"variant {item}::{variant}")
    if kind == "trait":
        body = section(page, ["required-associated-types", "provided-associated-types",
                              "required-associated-consts", "provided-associated-consts",
                              "required-methods", "provided-methods"],
                       ["foreign-impls", "implementors", "dyn-compatibility"])
        for t in re.findall(r'<section id="associatedtype\.([A-Za-z0-9_]+)"', body):
            lines.add(f"type {item}::{t}")
        for c in re.findall(r'<section id="associatedconstant\.([A-Za-z0-9_]+)"', body):
            lines.add(f"constant {item}::{c}")
        for m in re.findall(r'<section id="(?:ty)?method\.([A-Za-z0-9_]+)"', body):
            lines.add(f"method {item}::{m}")
    elif kind in ("struct", "enum", "union", "type"):
        body = section(page, ["implementations-list"],
                       ["deref-methods", "trait-implementations", "synthetic-implementations",
                        "blanket-implementations"])
        for c in re.findall(r'<section id="associatedconstant\.([A-Za-z0-9_]+)"', body):
            lines.add(f"constant {item}::{c}")
        for m in re.findall(r'<section id="method\.([A-Za-z0-9_]+)"', body):
            lines.add(f"method {item}::{m}")


# A public item has one path: a module page that lists a re-export of an
# item of this crate (rustdoc shows `pub use` of an item that is public
# elsewhere as a re-export, not inline) names a second path to it. Only
# re-exports of other crates (`pub use azure_identity;`) are allowed.
second_paths = []


def reexports(rel_dir, path, page):
    start = page.find('id="reexports"')
    if start < 0:
        return
    end = page.find("<h2", start + 1)
    for code in re.findall(r"<code>(.*?)</code>", page[start : end if end > 0 else len(page)], re.S):
        text = html.unescape(re.sub(r"<[^>]+>", "", code)).strip()
        target = text.removeprefix("pub use ").rstrip(";").split(" as ")[0]
        first = target.split("::")[0]
        if first in ("crate", "self", "super") or os.path.isdir(os.path.join(root, rel_dir, first)):
            second_paths.append(f"{path}: {text}")


# Modules: walk the tree from the crate's index (stale pages of modules that
# are no longer public may lie beside them in the target dir).
def walk(rel_dir, path):
    lines.add(f"mod {path}")
    page = read(os.path.join(root, rel_dir, "index.html"))
    reexports(rel_dir, path, page)
    for href, title in re.findall(r'<a class="mod" href="([^"]+)/index\.html" title="mod ([^"]+)"', page):
        if "/" in href or href.startswith("."):
            continue  # a re-export pointing elsewhere
        walk(os.path.join(rel_dir, href), html.unescape(title))


walk("", crate)

# Items: all.html lists every item at its documented path.
page = read(os.path.join(root, "all.html"))
body = page[page.find('id="main-content"') :]
for href in re.findall(r'<li><a href="([^"]+\.html)">', body):
    kind, name = os.path.basename(href)[: -len(".html")].split(".", 1)
    module = os.path.dirname(href).replace("/", "::")
    lines.add(f"{kind} " + "::".join(p for p in (crate, module, name) if p))
    members(os.path.join(root, href), href)

if second_paths:
    print("public-api.sh: these re-exports give an item a second public path; keep one", file=sys.stderr)
    for line in second_paths:
        print(f"  {line}", file=sys.stderr)
    sys.exit(1)
print("\n".join(sorted(lines)))
EOF
)"

file=tables/public-api.txt
case "$mode" in
    print) printf '%s\n' "$list" ;;
    bless)
        printf '%s\n' "$list" > "$file"
        echo "public-api.sh: wrote $file ($(wc -l < "$file") items)" >&2
        ;;
    check)
        if ! diff -u --label "$file (checked in)" --label "public surface (built)" "$file" <(printf '%s\n' "$list"); then
            echo "public-api.sh: the public surface changed; if that is intended, run scripts/public-api.sh --bless and commit $file" >&2
            exit 1
        fi
        echo "public-api.sh: the public surface matches $file" >&2
        ;;
esac
