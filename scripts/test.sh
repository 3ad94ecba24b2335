#!/usr/bin/env bash
# Runs the static checks, then the whole test suite against a private Azurite
# on free loopback ports.
#
#   scripts/test.sh                  the gate: everything below (CI runs this)
#   scripts/test.sh quick            the quick loop: `cargo fmt --all -- --check`,
#                                    clippy of the workspace (all targets, -D warnings),
#                                    the unit tests of every crate (`--lib --bins`) and
#                                    the conformance scenarios on the in-memory backend
#                                    (`memory::`; the pooled and Azure runs are the
#                                    gate's); no Azurite, no doc tests
#   scripts/test.sh TARGET.. [-- FILTER..]
#                                    a targeted run: only the named targets, e.g.
#                                    `--test differential`, `-p unified-tables --lib`,
#                                    against a private Azurite as below, without the
#                                    static checks and the doc tests
#   scripts/test.sh [ARGS..]         other arguments (a `-- FILTER`, cargo options)
#                                    are added to the gate's `cargo test` of every target
#
# A run is targeted when its arguments select targets or packages: `--lib`,
# `--bin[s]`, `--test[s]`, `--example[s]`, `--bench[es]`, `--doc`,
# `--all-targets`, `-p`/`--package`.
#
# 0. Static checks, each run to the end so one run shows every finding; when
#    any fails, the script stops before Azurite with the first failing exit
#    code (and a zero test count on the closing line):
#    `cargo fmt --all -- --check`;
#    `cargo clippy --workspace --all-targets -- -D warnings`;
#    `cargo clippy -p unified-tables --all-targets -- -D warnings` with
#    `--no-default-features` and with each feature of tables/Cargo.toml alone (workspace feature
#    unification builds only the all-features combination otherwise);
#    `cargo doc --no-deps --all-features` of both published crates with
#    RUSTDOCFLAGS="-D warnings" (broken intra-doc links);
#    `scripts/public-api.sh --check` (the public surface against
#    tables/public-api.txt);
#    `cargo package -p unified-tables-derive -p unified-tables` (each crate
#    builds from its packaged files alone; needs the crates.io index).
# 1. Installs Azurite from package-lock.json (npm ci) when it is missing or the
#    lockfile changed since the last install.
# 2. Starts Azurite (blob, queue, table) on free 127.0.0.1 ports, its data in
#    memory (a workspace on disk is serialized whole from time to time, which
#    fails once a long run has stored a few hundred MB) and its log in a
#    temporary directory, removed on exit (also on failure or ^C).
#    Beside it starts a second Azurite over HTTPS that accepts Entra ID bearer
#    tokens (`--oauth basic`), with a throwaway certificate authority and
#    server certificate made by openssl in the same directory, and two more
#    plain instances: with the first, the three accounts of the scenarios
#    run on a pooled handle.
# 3. Exports UNIFIED_TABLES_TEST_CONNECTION (a connection string for the
#    first), UNIFIED_TABLES_TEST_POOL (the three accounts' connection strings,
#    separated by `|`), UNIFIED_TABLES_TEST_OAUTH_TABLE / _BLOB (the HTTPS endpoints of
#    the second), UNIFIED_TABLES_TEST_CA (the authority's PEM file) and
#    UNIFIED_TABLES_REQUIRE_AZURE=1, unsets the proxy variables, then runs
#    `cargo test --workspace --all-targets --no-fail-fast "$@"` and
#    `cargo test --workspace --doc --no-fail-fast` (a targeted run:
#    `cargo test --no-fail-fast "$@"`, with `--workspace` unless it names
#    a package).
#    The exit code is the first failing one, or 0.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'test.sh: %s\n' "$*" >&2; }

# summarize LOG: one closing line over every test binary (cargo prints one
# summary per binary).
summarize() {
    sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
        /^test result:/ {
            for (i = 1; i <= NF; i++) {
                if ($(i) ~ /^passed;?$/) passed += $(i - 1)
                if ($(i) ~ /^failed;?$/) failed += $(i - 1)
                if ($(i) ~ /^ignored;?$/) ignored += $(i - 1)
            }
        }
        END { printf "all tests: %d passed, %d failed, %d skipped\n", passed, failed, ignored }'
}

mode=gate
if [[ "${1:-}" == quick ]]; then
    mode=quick
    shift
    if (($# > 0)); then
        log "quick takes no arguments; for a targeted run: scripts/test.sh --test NAME [-- FILTER]"
        exit 2
    fi
fi
# Whether the arguments select targets or packages (a targeted run), and
# whether they name a package (then without `--workspace`).
targeted=0
packaged=0
for arg in "$@"; do
    case "$arg" in
        --) break ;;
        --lib | --bin | --bin=* | --bins | --test | --test=* | --tests | --example | --example=* | --examples | \
            --bench | --bench=* | --benches | --doc | --all-targets) targeted=1 ;;
        -p | -p* | --package | --package=*)
            targeted=1
            packaged=1
            ;;
    esac
done

# --- The quick loop ---------------------------------------------------------------
if [[ $mode == quick ]]; then
    # In memory only: no Azure test is asked for, whatever the shell has set.
    unset UNIFIED_TABLES_TEST_CONNECTION UNIFIED_TABLES_TEST_POOL UNIFIED_TABLES_TEST_OAUTH_TABLE \
        UNIFIED_TABLES_TEST_OAUTH_BLOB UNIFIED_TABLES_TEST_CA UNIFIED_TABLES_REQUIRE_AZURE
    unset HTTP_PROXY http_proxy HTTPS_PROXY https_proxy ALL_PROXY all_proxy
    started=$SECONDS
    step() {
        local name=$1 at=$SECONDS
        shift
        log "quick: $name"
        if ! "$@"; then
            log "quick: $name FAILED after $((SECONDS - started)) s"
            exit 1
        fi
        log "quick: $name: ok in $((SECONDS - at)) s"
    }
    quick_log="$(mktemp "${TMPDIR:-/tmp}/unified-tables-quick.XXXXXX")"
    trap 'rm -f "$quick_log"' EXIT
    step "rustfmt" cargo fmt --all -- --check
    step "clippy (workspace, all targets)" cargo clippy --quiet --workspace --all-targets -- -D warnings
    # tests NAME CARGO-TEST-ARGS..: one `cargo test`, its output kept for the closing line.
    tests() {
        local name=$1 at=$SECONDS
        shift
        log "quick: $name"
        cargo test --no-fail-fast "$@" 2>&1 | tee -a "$quick_log"
        status=${PIPESTATUS[0]}
        log "quick: $name: $( ((status == 0)) && echo ok || echo "FAILED ($status)") in $((SECONDS - at)) s"
    }
    set +e
    tests "unit tests (every crate's --lib and --bins)" --workspace --lib --bins
    if ((status == 0)); then
        # Eight at a time: many scenarios wait on a lease, a grace period or
        # a held request more than they compute.
        tests "conformance scenarios on the in-memory backend (memory::)" -p unified-tables-tests \
            --test conformance -- memory:: --skip pooled_memory:: --test-threads 8
    fi
    set -e
    summarize "$quick_log"
    log "quick loop: $( ((status == 0)) && echo ok || echo FAILED) in $((SECONDS - started)) s"
    exit "$status"
fi

# A CI run builds once from a clean checkout: incremental caches would only
# take disk space there.
if [[ "${CI:-}" == true ]]; then
    export CARGO_INCREMENTAL=0
fi
# disk_report WHEN: the build's size and the free space, for runs that fail
# on a full disk.
disk_report() {
    local dir="${CARGO_TARGET_DIR:-target}"
    log "disk $1: build dir $(du -sh "$dir" 2>/dev/null | cut -f1 || echo '?'), $(df -h --output=avail . | tail -1 | tr -d ' ') free"
}
disk_report "at start"

# --- 0. Static checks (the gate only) ------------------------------------------------
static_status=0
failed_checks=()
# check NAME COMMAND...: runs one check, logs its time, remembers a failure.
check() {
    local name=$1 started=$SECONDS code=0
    shift
    log "check: $name"
    "$@" || code=$?
    log "check: $name: $( ((code == 0)) && echo ok || echo "FAILED ($code)") in $((SECONDS - started)) s"
    if ((code != 0)); then
        failed_checks+=("$name")
        ((static_status != 0)) || static_status=$code
    fi
}
static_started=$SECONDS
if ((targeted)); then
    log "a targeted run: no static checks, no doc tests"
else
    check "rustfmt" cargo fmt --all -- --check
    check "clippy (workspace, all targets)" cargo clippy --quiet --workspace --all-targets -- -D warnings
    check "clippy (unified-tables, no default features)" \
        cargo clippy --quiet -p unified-tables --all-targets --no-default-features -- -D warnings
    # The features declared in tables/Cargo.toml, but `default`.
    features="$(awk '/^\[/ { in_features = ($0 == "[features]") }
        in_features && /^[A-Za-z0-9_-]+ *=/ && $1 != "default" { print $1 }' tables/Cargo.toml)"
    for feature in $features; do
        check "clippy (unified-tables, only $feature)" \
            cargo clippy --quiet -p unified-tables --all-targets --no-default-features --features "$feature" -- -D warnings
    done
    check "rustdoc (-D warnings)" env RUSTDOCFLAGS="-D warnings" \
        cargo doc --quiet --no-deps -p unified-tables -p unified-tables-derive --all-features
    check "public API (tables/public-api.txt)" env SKIP_DOC=1 scripts/public-api.sh --check
    check "cargo package" cargo package --quiet -p unified-tables-derive -p unified-tables --allow-dirty
    log "static checks took $((SECONDS - static_started)) s"
    disk_report "after the static checks"
fi
if ((static_status != 0)); then
    log "static checks failed: $(IFS=';'; echo "${failed_checks[*]}"); not starting Azurite or the tests"
    echo "all tests: 0 passed, 0 failed, 0 skipped"
    exit "$static_status"
fi

# --- 1. Azurite ---------------------------------------------------------------
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
stamp="node_modules/.unified-tables-lock-hash"
if [[ ! -x node_modules/.bin/azurite || ! -f "$stamp" || "$(cat "$stamp")" != "$lock_hash" ]]; then
    log "installing Azurite (npm ci)"
    started=$SECONDS
    npm ci --no-audit --no-fund --loglevel=error
    printf '%s\n' "$lock_hash" > "$stamp"
    log "npm ci took $((SECONDS - started)) s"
fi

# --- 2. Free ports, start, wait -------------------------------------------------
free_ports() {
    # Twelve distinct free ports, held open together so they differ.
    if python3 -c 'pass' 2>/dev/null; then
        python3 - <<'EOF'
import socket
socks = []
for _ in range(12):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
    else
        local ports=() p
        while ((${#ports[@]} < 12)); do
            p=$((20000 + RANDOM % 40000))
            [[ " ${ports[*]} " == *" $p "* ]] && continue
            if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
                ports+=("$p")
            fi
        done
        echo "${ports[*]}"
    fi
}

tmp="$(mktemp -d "${TMPDIR:-/tmp}/unified-tables-azurite.XXXXXX")"
azurite_pids=()
stop() {
    local pid=$1
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}
cleanup() {
    local status=$?
    for pid in "${azurite_pids[@]}"; do
        stop "$pid"
    done
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A throwaway certificate authority and a server certificate for 127.0.0.1
# signed by it (a self-signed certificate cannot be its own authority for
# rustls), for the HTTPS Azurite.
make_certificates() {
    if ! command -v openssl >/dev/null; then
        log "openssl is needed to make the HTTPS Azurite's certificate (apt-get install openssl)"
        exit 1
    fi
    local dir="$tmp/tls"
    mkdir -p "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=unified-tables test CA" \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
        -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
        > "$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
        -days 2 -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
}

# start_azurite NAME BLOB_PORT TABLE_PORT QUEUE_PORT [extra Azurite options]
start_azurite() {
    local name=$1 blob=$2 table=$3 queue=$4
    shift 4
    node_modules/.bin/azurite \
        --blobHost 127.0.0.1 --blobPort "$blob" \
        --tableHost 127.0.0.1 --tablePort "$table" \
        --queueHost 127.0.0.1 --queuePort "$queue" \
        --loose --skipApiVersionCheck --disableTelemetry \
        --inMemoryPersistence "$@" >"$tmp/$name.log" 2>&1 &
    azurite_pids+=("$!")
}

# wait_ready NAME PORT PID
wait_ready() {
    local name=$1 port=$2 pid=$3
    local deadline=$((SECONDS + 30))
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "Azurite ($name) exited before it was ready; its log:"
            cat "$tmp/$name.log" >&2
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            log "Azurite's ($name) table port $port did not answer within 30 s; its log:"
            cat "$tmp/$name.log" >&2
            exit 1
        fi
        sleep 0.2
    done
}

make_certificates
read -r blob_port table_port queue_port oauth_blob_port oauth_table_port oauth_queue_port \
    pool1_blob pool1_table pool1_queue pool2_blob pool2_table pool2_queue < <(free_ports)
log "starting Azurite: blob $blob_port, table $table_port, queue $queue_port (data in $tmp)"
start_azurite data "$blob_port" "$table_port" "$queue_port"
log "starting Azurite over HTTPS with OAuth: blob $oauth_blob_port, table $oauth_table_port"
start_azurite oauth "$oauth_blob_port" "$oauth_table_port" "$oauth_queue_port" \
    --oauth basic --cert "$tmp/tls/server.pem" --key "$tmp/tls/server.key"
log "starting two more Azurite instances for the pooled scenarios: tables $pool1_table, $pool2_table"
start_azurite pool1 "$pool1_blob" "$pool1_table" "$pool1_queue"
start_azurite pool2 "$pool2_blob" "$pool2_table" "$pool2_queue"
wait_ready data "$table_port" "${azurite_pids[0]}"
wait_ready oauth "$oauth_table_port" "${azurite_pids[1]}"
wait_ready pool1 "$pool1_table" "${azurite_pids[2]}"
wait_ready pool2 "$pool2_table" "${azurite_pids[3]}"
log "Azurite is ready"

# --- 3. Tests ---------------------------------------------------------------------
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
# connection BLOB_PORT TABLE_PORT: the connection string of one local instance.
connection() {
    printf 'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=%s;TableEndpoint=http://127.0.0.1:%s/devstoreaccount1;BlobEndpoint=http://127.0.0.1:%s/devstoreaccount1;' \
        "$key" "$2" "$1"
}
export UNIFIED_TABLES_TEST_CONNECTION="$(connection "$blob_port" "$table_port")"
# Three accounts (the first is the one above) for the scenarios run on a pooled handle.
export UNIFIED_TABLES_TEST_POOL="$UNIFIED_TABLES_TEST_CONNECTION|$(connection "$pool1_blob" "$pool1_table")|$(connection "$pool2_blob" "$pool2_table")"
export UNIFIED_TABLES_TEST_OAUTH_TABLE="https://127.0.0.1:$oauth_table_port/devstoreaccount1"
export UNIFIED_TABLES_TEST_OAUTH_BLOB="https://127.0.0.1:$oauth_blob_port/devstoreaccount1"
export UNIFIED_TABLES_TEST_CA="$tmp/tls/ca.pem"
export UNIFIED_TABLES_REQUIRE_AZURE=1
# The tests talk to loopback only, and every crate is fetched by now. Without
# proxy variables, entity requests take the path they take in production
# without a proxy (straight through hyper), whatever the machine has set.
unset HTTP_PROXY http_proxy HTTPS_PROXY https_proxy ALL_PROXY all_proxy

set +e
if ((targeted)); then
    workspace=(--workspace)
    if ((packaged)); then
        workspace=()
    fi
    cargo test "${workspace[@]}" --no-fail-fast "$@" 2>&1 | tee "$tmp/tests.log"
    status=${PIPESTATUS[0]}
else
    cargo test --workspace --all-targets --no-fail-fast "$@" 2>&1 | tee "$tmp/tests.log"
    status=${PIPESTATUS[0]}
    cargo test --workspace --doc --no-fail-fast 2>&1 | tee -a "$tmp/tests.log"
    doc_status=${PIPESTATUS[0]}
    if ((status == 0)); then
        status=$doc_status
    fi
fi
set -e

disk_report "after the tests"
summarize "$tmp/tests.log"
exit "$status"
