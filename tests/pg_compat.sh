#!/usr/bin/env bash
#
# pg_compat.sh - check that mkheap writes heap files a real PostgreSQL 15
# server accepts and reads back correctly.
#
# Steps:
#   1. mkheap writes two tables (pad 59 and pad 200); genstats computes what
#      they should contain.
#   2. pg_filedump parses each file: no "Error", block count == size/8192,
#      every tuple decodes as (int4, int4, int8, text), tuple count matches.
#   3. A throw-away PostgreSQL 15 cluster (private temp dir, Unix socket only,
#      no TCP) gets tables t and u; their relation files are replaced by the
#      mkheap files while the server is stopped.
#   4. count/sum/min/max/sum(length) from PostgreSQL must equal genstats, and
#      amcheck's verify_heapam() must report nothing.
#   5. Optional (SEQSCAN set): seqscan's JSON output must agree with
#      PostgreSQL for a couple of WHERE clauses (see check_seqscan).
#
# Environment:
#   MKHEAP, GENSTATS      paths to the binaries (required)
#   SEQSCAN               path to seqscan (optional; enables check_seqscan)
#   PG_BINDIR             PostgreSQL 15 bin dir (default: `pg_config --bindir`
#                         if that is a v15 server, else /usr/lib/postgresql/15/bin)
#   PG_FILEDUMP           pg_filedump binary (default: from PATH or PG_BINDIR)
#   PG_COMPAT_USER        unprivileged user for the server when run as root
#                         (default: nobody)
#   HEAPSCAN_REQUIRE_PG=1 missing PostgreSQL/pg_filedump is a failure instead
#                         of a skip
#
# Exit status: 0 ok, 1 failure, 77 skipped (Meson's skip status).
#
# The cluster recipe (temp dir, socket, server user, cleanup) is pglib.sh's.

set -euo pipefail

readonly PROG=pg_compat
readonly BLCKSZ=8192
readonly RELSEG_BYTES=$((1024 * 1024 * 1024))
readonly PG_PORT=5432            # socket lives in a private dir: no clashes

# Table parameters: name rows pad seed
readonly T_SPEC="t 20000 59 7"
readonly U_SPEC="u 5000 200 11"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=pglib.sh disable=SC1091
. "${here}/pglib.sh"
pgl_install_traps

MKHEAP=${MKHEAP:-}
GENSTATS=${GENSTATS:-}
required_exe MKHEAP
required_exe GENSTATS

SEQSCAN_BIN=""
if [[ -n "${SEQSCAN:-}" ]]; then
    SEQSCAN_BIN=$(abs_exe "${SEQSCAN}") || SEQSCAN_BIN=""
fi

# shellcheck disable=SC2119  # no programs beyond the standard four
pgl_find_bindir
readonly PG_BINDIR

PG_FILEDUMP_BIN=""
if [[ -n "${PG_FILEDUMP:-}" ]]; then
    PG_FILEDUMP_BIN=$(abs_exe "${PG_FILEDUMP}") ||
        skip_or_fail "pg_filedump not found (PG_FILEDUMP=${PG_FILEDUMP})"
else
    PG_FILEDUMP_BIN=$(abs_exe pg_filedump) ||
        PG_FILEDUMP_BIN=$(abs_exe "${PG_BINDIR}/pg_filedump") ||
        skip_or_fail "pg_filedump not found (not in PATH nor in ${PG_BINDIR})"
fi
readonly PG_FILEDUMP_BIN

# -i interprets tuple headers; -D (pg_filedump >= 11) also decodes every tuple
# with our schema, giving one "COPY: " line per tuple. No -k: mkheap's
# checksum is not PostgreSQL's.
FILEDUMP_DECODE=0
filedump_help=$("${PG_FILEDUMP_BIN}" -h 2>&1 || true)
if [[ "${filedump_help}" == *$'\n'"  -D  Decode"* ]]; then
    FILEDUMP_DECODE=1
fi
readonly FILEDUMP_DECODE

# ---------------------------------------------------------------------------
# Server user, environment, private temporary directory
# ---------------------------------------------------------------------------

pgl_setup_user
pgl_clean_env
pgl_make_tmp pg_compat
readonly tmp=${PGL_TMP} is_root=${PGL_IS_ROOT} pg_user=${PGL_USER} \
    pg_uid=${PGL_UID} pg_gid=${PGL_GID}
cd "${tmp}"
mkdir "${tmp}/heap"
readonly DATA="${tmp}/data"
readonly SERVER_LOG="${tmp}/server.log"

# ---------------------------------------------------------------------------
# Cluster helpers
# ---------------------------------------------------------------------------

pgl_connect "${tmp}" "${PG_PORT}" "${SERVER_LOG}"

server_start()     { pgl_start "${DATA}" "${SERVER_LOG}"; }
server_stop_fast() { pgl_stop_fast "${DATA}" "${SERVER_LOG}"; }

# compare LABEL EXPECTED GOT
compare() {
    local verdict=ok
    [[ "$2" == "$3" ]] || verdict=MISMATCH
    printf '%s:   %-34s expected=%-16s got=%-16s %s\n' "${PROG}" "$1" "$2" "$3" "${verdict}"
    if [[ "${verdict}" != ok ]]; then
        fail_check "$1: expected '$2' but got '$3'"
    fi
}

# ---------------------------------------------------------------------------
# Writing and describing the heap files
# ---------------------------------------------------------------------------

declare -A G_COUNT G_SUMV G_MINK G_MAXK G_SUMLEN

# gen_table NAME ROWS PAD SEED
gen_table() {
    local name=$1 rows=$2 pad=$3 seed=$4 line re
    local file="${tmp}/heap/${name}"

    log "[${name}] mkheap --rows ${rows} --pad ${pad} --seed ${seed}"
    if ! "${MKHEAP}" --rows "${rows}" --pad "${pad}" --seed "${seed}" --force --quiet \
            "${file}" >"${tmp}/mkheap.out" 2>&1; then
        show_file "${tmp}/mkheap.out" "mkheap output"
        die "mkheap failed for table ${name}"
    fi
    [[ -f "${file}" ]] || die "mkheap did not create ${file}"

    if ! line=$("${GENSTATS}" --rows "${rows}" --pad "${pad}" --seed "${seed}" 2>"${tmp}/genstats.err"); then
        show_file "${tmp}/genstats.err" "genstats stderr"
        die "genstats failed for table ${name}"
    fi
    re='^count=(-?[0-9]+) sum_v=(-?[0-9]+) min_k=(-?[0-9]+) max_k=(-?[0-9]+) sum_len=(-?[0-9]+)$'
    [[ "${line}" =~ ${re} ]] ||
        die "unexpected genstats output for table ${name}: '${line}'"
    G_COUNT[${name}]=${BASH_REMATCH[1]}
    G_SUMV[${name}]=${BASH_REMATCH[2]}
    G_MINK[${name}]=${BASH_REMATCH[3]}
    G_MAXK[${name}]=${BASH_REMATCH[4]}
    G_SUMLEN[${name}]=${BASH_REMATCH[5]}
    log "[${name}] genstats: ${line}"
    compare "[${name}] genstats count vs --rows" "${rows}" "${G_COUNT[${name}]}"
}

# Print the segment files of a heap file: FILE, FILE.1, FILE.2, ...
segments() {
    local base=$1 n=1
    printf '%s\n' "${base}"
    while [[ -e "${base}.${n}" ]]; do
        printf '%s\n' "${base}.${n}"
        n=$((n + 1))
    done
}

# check_filedump NAME: pg_filedump must parse every segment without errors.
check_filedump() {
    local name=$1 f size out errs nblocks expected last tuples bad_xid
    local seg=0 total_tuples=0 nsegs
    local -a segs opts
    mapfile -t segs < <(segments "${tmp}/heap/${name}")
    nsegs=${#segs[@]}
    for f in "${segs[@]}"; do
        size=$(stat -c %s -- "${f}")
        expected=$((size / BLCKSZ))
        log "[${name}] pg_filedump ${f##*/} (${size} bytes)"
        if (( size % BLCKSZ != 0 )); then
            fail_check "[${name}] ${f##*/}: size ${size} is not a multiple of ${BLCKSZ}"
        fi
        if (( seg < nsegs - 1 && size != RELSEG_BYTES )); then
            fail_check "[${name}] ${f##*/}: non-final segment is ${size} bytes, PostgreSQL needs ${RELSEG_BYTES}"
        fi
        out="${tmp}/filedump.${name}.${seg}.txt"
        if (( FILEDUMP_DECODE )); then
            opts=(-i -D "int,int,bigint,text")
        else
            opts=(-i)
        fi
        if ! "${PG_FILEDUMP_BIN}" "${opts[@]}" "${f}" >"${out}" 2>&1; then
            show_file "${out}" "pg_filedump output"
            fail_check "[${name}] pg_filedump exited with an error on ${f##*/}"
        fi
        # COPY: lines hold decoded row data (random pad text may contain "error").
        errs=$(grep -v '^COPY: ' "${out}" | grep -n -i -m 20 'error' || true)
        if [[ -n "${errs}" ]]; then
            warn "pg_filedump reported errors for ${f##*/} (first 20):"
            printf '%s\n' "${errs}" | sed 's/^/    /' >&2
            fail_check "[${name}] pg_filedump output for ${f##*/} contains 'Error'"
        fi
        nblocks=$(grep -c -E '^Block +[0-9]+ \*+$' "${out}" || true)
        compare "[${name}] pg_filedump blocks (${f##*/})" "${expected}" "${nblocks}"
        last=$(sed -n 's/^\*\*\* End of File Encountered\. Last Block Read: \([0-9][0-9]*\) \*\*\*$/\1/p' "${out}")
        if [[ -z "${last}" ]]; then
            fail_check "[${name}] pg_filedump did not reach the end of ${f##*/}"
        elif (( expected > 0 )); then
            compare "[${name}] pg_filedump last block (${f##*/})" "$((expected - 1))" "${last}"
        fi
        if (( FILEDUMP_DECODE )); then
            tuples=$(grep -c '^COPY: ' "${out}" || true)
        else
            tuples=$(grep -c -E '^ +XMIN: ' "${out}" || true)
        fi
        total_tuples=$((total_tuples + tuples))
        # Every tuple is supposed to be frozen and live: pg_filedump shows the
        # effective xmin (2 = FrozenTransactionId, also for frozen infomask
        # bits) and xmax 0.
        bad_xid=$(grep -E '^ +XMIN: ' "${out}" | grep -c -v -E '^ +XMIN: 2 +XMAX: 0( |$)' || true)
        compare "[${name}] tuples not frozen+live (${f##*/})" 0 "${bad_xid}"
        seg=$((seg + 1))
    done
    compare "[${name}] pg_filedump tuples" "${G_COUNT[${name}]}" "${total_tuples}"
}

# install_heap NAME RELPATH: put mkheap's file(s) in place of the relation.
install_heap() {
    local name=$1 rel=$2 src dst n f
    local base="${DATA}/${rel}"
    rm -f -- "${base}_fsm" "${base}_vm"
    for f in "${base}".[0-9]*; do
        if [[ -e "${f}" ]]; then rm -f -- "${f}"; fi
    done
    n=0
    while IFS= read -r src; do
        if (( n == 0 )); then dst=${base}; else dst="${base}.${n}"; fi
        cp -- "${src}" "${dst}"
        if (( is_root )); then
            chown "${pg_uid}:${pg_gid}" "${dst}"
        fi
        chmod 0600 "${dst}"
        n=$((n + 1))
    done < <(segments "${tmp}/heap/${name}")
    log "[${name}] installed ${n} segment(s) as ${rel}"
}

# check_table NAME: PostgreSQL must see what genstats says, amcheck clean.
check_table() {
    local name=$1 c s mn mx sl n
    log "[${name}] querying PostgreSQL"
    if sql "SELECT count(*), sum(v), min(k), max(k), sum(length(pad)) FROM ${name}"; then
        IFS='|' read -r c s mn mx sl <<<"${SQL_OUT}"
        compare "[${name}] count(*)" "${G_COUNT[${name}]}" "${c}"
        compare "[${name}] sum(v)" "${G_SUMV[${name}]}" "${s}"
        compare "[${name}] min(k)" "${G_MINK[${name}]}" "${mn}"
        compare "[${name}] max(k)" "${G_MAXK[${name}]}" "${mx}"
        compare "[${name}] sum(length(pad))" "${G_SUMLEN[${name}]}" "${sl}"
    else
        fail_check "[${name}] PostgreSQL could not read table ${name}"
    fi

    if sql "SELECT count(*) FROM verify_heapam('${name}')"; then
        n=${SQL_OUT}
        compare "[${name}] verify_heapam() problems" 0 "${n}"
        if [[ "${n}" != 0 ]] &&
           sql "SELECT blkno, offnum, attnum, msg FROM verify_heapam('${name}') LIMIT 20"; then
            warn "verify_heapam('${name}') says (blkno|offnum|attnum|msg, first 20):"
            printf '%s\n' "${SQL_OUT}" | sed 's/^/    /' >&2
        fi
    else
        fail_check "[${name}] verify_heapam('${name}') failed"
    fi
}

# ---------------------------------------------------------------------------
# seqscan hook
# ---------------------------------------------------------------------------

# json_int KEY JSON: print the integer value of "KEY" (null -> 0).
json_int() {
    local key=$1 json=$2 m
    m=$(printf '%s\n' "${json}" |
        grep -o -E "\"${key}\"[[:space:]]*:[[:space:]]*(\"?-?[0-9]+\"?|null)" || true)
    [[ -n "${m}" && "${m}" != *$'\n'* ]] || return 1
    m=$(printf '%s\n' "${m}" | sed -E 's/^[^:]*:[[:space:]]*//; s/"//g')
    [[ "${m}" == null ]] && m=0
    printf '%s\n' "${m}"
}

# ===== check_seqscan =======================================================
# Runs when SEQSCAN is set and is an executable. For each predicate compares
# PostgreSQL's count(*), sum(v) with `seqscan --access A --where PRED --json
# FILE`'s "rows_returned" and "sum_v", under both page access methods.
check_seqscan() {
    local name=$1 file="${tmp}/heap/$1" where json rows sumv pg_count pg_sum access
    for access in read mmap; do
    for where in "k >= 500000" "id <= 1000"; do
        log "[${name}] seqscan --access ${access} --where \"${where}\""
        if ! sql "SELECT count(*), coalesce(sum(v), 0) FROM ${name} WHERE ${where}"; then
            fail_check "[${name}] PostgreSQL query with WHERE ${where} failed"
            continue
        fi
        IFS='|' read -r pg_count pg_sum <<<"${SQL_OUT}"
        if ! json=$("${SEQSCAN_BIN}" --access "${access}" --where "${where}" --json "${file}" 2>"${tmp}/seqscan.err"); then
            show_file "${tmp}/seqscan.err" "seqscan stderr"
            fail_check "[${name}] seqscan failed for WHERE ${where}"
            continue
        fi
        if ! rows=$(json_int rows_returned "${json}") ||
           ! sumv=$(json_int sum_v "${json}"); then
            warn "seqscan output: ${json}"
            fail_check "[${name}] seqscan JSON lacks a single integer rows_returned/sum_v"
            continue
        fi
        compare "[${name}] ${access} WHERE ${where}: rows" "${pg_count}" "${rows}"
        compare "[${name}] ${access} WHERE ${where}: sum(v)" "${pg_sum}" "${sumv}"
    done
    done
}

# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

log "PostgreSQL: $("${PG_BINDIR}/postgres" --version) (${PG_BINDIR})"
log "pg_filedump: ${PG_FILEDUMP_BIN}"
if (( is_root )); then
    log "running as root: server runs as '${pg_user}'"
fi

tables=()
for spec in "${T_SPEC}" "${U_SPEC}"; do
    read -r name rows pad seed <<<"${spec}"
    tables+=("${name}")
    gen_table "${name}" "${rows}" "${pad}" "${seed}"
done

# mkheap's files are read by the server user when copied; the copies are
# chowned, but make the originals readable too for the hook and debugging.
chmod -R a+rX "${tmp}/heap"

for name in "${tables[@]}"; do
    check_filedump "${name}"
done

log "initdb in ${tmp}"
pgl_initdb "${DATA}"
pgl_write_conf "${DATA}" "${tmp}" "${PG_PORT}" 'synchronous_commit = off'

server_start
sql_or_die "SELECT count(*) FROM pg_available_extensions WHERE name = 'amcheck'"
if [[ "${SQL_OUT}" != 1 ]]; then
    skip_or_fail "the amcheck extension is not installed for ${PG_BINDIR}"
fi

declare -A RELPATH
for name in "${tables[@]}"; do
    sql_or_die "CREATE TABLE ${name} (id int4, k int4, v int8, pad text)"
    sql_or_die "SELECT pg_relation_filepath('${name}')"
    [[ "${SQL_OUT}" =~ ^base/[0-9]+/[0-9]+$ ]] ||
        die "unexpected relation path for ${name}: '${SQL_OUT}'"
    RELPATH[${name}]=${SQL_OUT}
    log "[${name}] relation file: ${SQL_OUT}"
done
sql_or_die "CREATE EXTENSION amcheck"
server_stop_fast

for name in "${tables[@]}"; do
    install_heap "${name}" "${RELPATH[${name}]}"
done

server_start
for name in "${tables[@]}"; do
    check_table "${name}"
done

if [[ -n "${SEQSCAN:-}" ]]; then
    if [[ -n "${SEQSCAN_BIN}" ]]; then
        for name in "${tables[@]}"; do
            check_seqscan "${name}"
        done
    else
        log "seqscan check skipped: SEQSCAN=${SEQSCAN} is not an executable file"
    fi
fi

# Anything alarming in the server log is worth showing.
if grep -q -E '(ERROR|FATAL|PANIC|WARNING):' "${SERVER_LOG}"; then
    warn "server log contains problems:"
    grep -E '(ERROR|FATAL|PANIC|WARNING):' "${SERVER_LOG}" | head -n 40 | sed 's/^/    /' >&2 || true
fi

if (( PGL_FAILURES > 0 )); then
    show_file "${SERVER_LOG}" "server log" 20
    die "${PGL_FAILURES} check(s) failed"
fi

summary=""
for name in "${tables[@]}"; do
    summary+="${summary:+, }${name}: ${G_COUNT[${name}]} rows"
done
log "ok (${summary})"
exit 0
