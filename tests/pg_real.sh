#!/usr/bin/env bash
#
# pg_real.sh - end-to-end check of seqscan on heap files a real PostgreSQL 15
# server wrote: for every table state below, seqscan must give PostgreSQL's
# answer to SELECT count(*), sum(v) FROM tbl WHERE qual, or refuse clearly.
#
# Steps:
#   1. A private cluster without data checksums (autovacuum off, one
#      prepared-transaction slot or more) gets one table per state: fresh
#      (no hint bits), deletes, HOT and non-HOT updates, aborted
#      inserts/deletes/updates, subtransactions, row locks, MultiXacts (a
#      locker plus an updater through dblink, two lockers), an unhinted last
#      UPDATE, VACUUM, VACUUM FREEZE, NULLs in each column, TOAST (pglz,
#      external, STORAGE EXTERNAL, lz4), sums past 2^63, a prepared
#      transaction left prepared, and other schemas / ALTERed tables.
#      Every state is built twice, in the same statements and transactions:
#      NAME is scanned by seqscan, NAME_ans answers PostgreSQL's queries.
#      PostgreSQL sets hint bits and prunes pages when it reads a table, so
#      NAME is never read through PostgreSQL after it was built.
#   2. PostgreSQL's answers come from NAME_ans ("ERROR" when the query
#      fails, e.g. a column the table does not have).
#   3. CHECKPOINT, copy each NAME's relation file, and scan the copy with
#      `seqscan --checksum none` (and once with the default checksum mode);
#      `seqscan --pgdata` is refused while the server runs; stop the server
#      (pg_ctl stop -m fast) and scan with `seqscan --pgdata DIR RELFILE`.
#   4. A cluster made with initdb -k: `--checksum postgres` on a copy, exit 3
#      with heapscan's checksum, --pgdata, and --pgdata on a copy of the data
#      directory with one byte of a tuple on block 1 flipped (exit 3); and
#      --pgdata on a copy that crashed (stop -m immediate) after a committed
#      DELETE: a refusal, or PostgreSQL's answer after recovery.
#
# Verdicts, one line per (state, qual, mode):
#   copy     ok: exit 0 with PostgreSQL's exact count and sum (sum null when
#            PostgreSQL's is NULL), or exit 1 with stderr naming "block N"
#            and "item M".  FAIL: exit 0 with another answer, exit 0 where
#            PostgreSQL said ERROR, any other status, a crash.
#   pgdata   tables of t's schema: exit 0 with PostgreSQL's answer, nothing
#            else.  Other schemas and ALTERed tables: a refusal (exit 1) or
#            PostgreSQL's exact answer.
# The run ends with "pg_real: N passed, M failed".
#
# Environment:
#   SEQSCAN               path to seqscan (required)
#   MKHEAP                path to mkheap (optional: a harness self-check)
#   PG_BINDIR, PG_COMPAT_USER, HEAPSCAN_REQUIRE_PG=1   as pg_compat.sh
#   PG_REAL_VERBOSE=1     also print every seqscan command line
#
# Exit status: 0 every check passed, 1 a check failed, 77 skipped (no
# PostgreSQL 15, no dblink/pageinspect).

set -euo pipefail

readonly PROG=pg_real
readonly BLCKSZ=8192
readonly PORT1=5432              # sockets live in a private dir: no clashes
readonly PORT2=5433
readonly NROWS=1000              # rows of most tables
readonly TCOLS="id int4, k int4, v int8, pad text"
readonly RUN_TIMEOUT=60          # seconds one seqscan run may take
# Quals every table is asked; a table may add its own (NULL-able columns).
readonly BASE_QUALS=("k = -1" "k >= 500000" "id <= 100" "v < 1000000000"
                     "v >= 0" "k <> 7")

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=pglib.sh disable=SC1091
. "${here}/pglib.sh"
pgl_install_traps

SEQSCAN=${SEQSCAN:-}
required_exe SEQSCAN
MKHEAP_BIN=""
if [[ -n "${MKHEAP:-}" ]]; then
    MKHEAP_BIN=$(abs_exe "${MKHEAP}") || MKHEAP_BIN=""
fi

pgl_find_bindir pg_controldata pg_checksums
readonly PG_BINDIR
pgl_setup_user
pgl_clean_env
pgl_make_tmp pg_real
readonly tmp=${PGL_TMP}
cd "${tmp}"
mkdir "${tmp}/copy" "${tmp}/out"

TIMEOUT=()
if command -v timeout >/dev/null 2>&1; then
    TIMEOUT=(timeout -k 5 "${RUN_TIMEOUT}")
fi

passed=0
failed=0
declare -A MODE_ALL MODE_OK   # per mode: checks, and checks passed

# ---------------------------------------------------------------------------
# Table registry and state building
# ---------------------------------------------------------------------------

TABLES=()                 # in creation order
declare -A T_KIND         # t (t's schema) | other (other schema or ALTERed)
declare -A T_DESC         # what the state is
declare -A T_QUALS        # extra quals, separated by ';'
declare -A T_REL          # pg_relation_filepath of NAME
declare -A T_CLUSTER      # 1 or 2
declare -A T_STRICT_COPY  # 1: a copy must be answered (fully hinted table)
declare -A PG_ANS         # "NAME|QUAL" -> "count|sum" or "ERROR"
declare -A PG_ERRMSG      # NAME -> PostgreSQL's error message

CUR=""                    # the table being built
SCRIPT=""                 # its SQL script
cluster=1

# state NAME KIND DESCRIPTION [QUAL...]: start building table NAME.
state() {
    CUR=$1
    TABLES+=("$1")
    T_KIND[$1]=$2
    T_DESC[$1]=$3
    T_CLUSTER[$1]=${cluster}
    shift 3
    local IFS=';'
    T_QUALS[${CUR}]="$*"
    SCRIPT=""
}

# q STATEMENT: one statement as is.
q() { SCRIPT+="$*;"$'\n'; }

# b STATEMENT...: each STATEMENT for CUR and then for CUR_ans (@T is the
# table name), so both tables get the same rows in the same transactions.
b() {
    local s
    for s in "$@"; do
        q "${s//@T/${CUR}}"
        q "${s//@T/${CUR}_ans}"
    done
}

# build: run CUR's script.
build() {
    if ! sql_script <<<"${SCRIPT}"; then
        warn "the script for ${CUR} was:"
        printf '%s' "${SCRIPT}" | sed 's/^/    /' >&2
        die "building table ${CUR} failed"
    fi
}

# create [OPTIONS]: CREATE TABLE CUR and CUR_ans with t's columns.
create() { b "CREATE TABLE @T (${TCOLS})${1:+ $1}"; }

# ins LO HI: a committed INSERT of gen(LO, HI) into both tables.
ins() { q BEGIN; b "INSERT INTO @T SELECT * FROM gen($1, $2)"; q COMMIT; }

# ---------------------------------------------------------------------------
# Running seqscan and judging it
# ---------------------------------------------------------------------------

HS_RC=0
HS_ERR=""                 # first line of stderr
HS_ANS=""                 # "count|sum" (sum "" for null) when exit 0 and parsable
HS_SHOW=""                # heapscan's answer for the verdict line

# hs ARG...: run seqscan; fill HS_RC, HS_ERR, HS_ANS, HS_SHOW.
hs() {
    local out="${tmp}/out/ss.out" err="${tmp}/out/ss.err" json rows sum
    local re_rows='"rows_returned"[[:space:]]*:[[:space:]]*(-?[0-9]+)'
    local re_sum='"sum_v"[[:space:]]*:[[:space:]]*(-?[0-9]+|null)'
    if [[ "${PG_REAL_VERBOSE:-0}" == 1 ]]; then
        log "run: seqscan $*"
    fi
    HS_RC=0
    "${TIMEOUT[@]}" "${SEQSCAN}" "$@" </dev/null >"${out}" 2>"${err}" || HS_RC=$?
    HS_ERR=$(head -n 1 -- "${err}" | cut -c 1-200)
    HS_ANS=""
    if (( HS_RC == 0 )); then
        json=$(cat -- "${out}")
        if [[ "${json}" =~ ${re_rows} ]]; then
            rows=${BASH_REMATCH[1]}
            if [[ "${json}" =~ ${re_sum} ]]; then
                sum=${BASH_REMATCH[1]}
                [[ "${sum}" != null ]] || sum=""
                HS_ANS="${rows}|${sum}"
            fi
        fi
        if [[ -n "${HS_ANS}" ]]; then
            HS_SHOW=$(show_ans "${HS_ANS}")
        else
            HS_SHOW="exit 0 but no rows_returned/sum_v in: $(head -c 160 -- "${out}")"
        fi
    elif (( HS_RC == 124 || HS_RC == 137 )) && (( ${#TIMEOUT[@]} )); then
        HS_SHOW="timed out after ${RUN_TIMEOUT}s"
    elif (( HS_RC > 128 )); then
        HS_SHOW="crashed (signal $((HS_RC - 128)))${HS_ERR:+: ${HS_ERR}}"
    elif (( HS_RC == 1 )); then
        HS_SHOW="refused: ${HS_ERR}"
    else
        HS_SHOW="exit ${HS_RC}: ${HS_ERR}"
    fi
}

# show_ans "count|sum" -> "count=N sum=S" (S NULL for an empty sum).
show_ans() {
    local c=${1%%|*} s=${1#*|}
    printf 'count=%s sum=%s' "${c}" "${s:-NULL}"
}

# verdict STATE QUAL MODE PG-SHOWN HS-SHOWN ok|FAIL [WHY]
verdict() {
    local why=${7:-}
    MODE_ALL[$3]=$(( ${MODE_ALL[$3]:-0} + 1 ))
    if [[ "$6" == ok ]]; then
        passed=$((passed + 1))
        MODE_OK[$3]=$(( ${MODE_OK[$3]:-0} + 1 ))
    else
        failed=$((failed + 1))
    fi
    printf '%s: %-17s %-16s %-11s pg: %-32s hs: %s  %s%s\n' "${PROG}" \
        "$1" "$2" "$3" "$4" "$5" "$6" "${why:+ (${why})}"
}

# judge STATE QUAL MODE RULE: judge the last hs run against PostgreSQL.
#   copy     exact answer, or exit 1 naming a block and an item
#   strict   exact answer only
#   lenient  exact answer, or exit 1 (any message)
#   verify   exit 3 naming a block (a page failed verification)
#   default  exact answer, or exit 1 or exit 3
judge() {
    local st=$1 qual=$2 mode=$3 rule=$4 pg why="" ok=FAIL shown
    [[ -n "${PG_ANS["${st}|${qual}"]+set}" ]] || die "no PostgreSQL answer for ${st}, ${qual}"
    pg=${PG_ANS["${st}|${qual}"]}
    if [[ "${pg}" == ERROR ]]; then shown=ERROR; else shown=$(show_ans "${pg}"); fi
    local exact=0
    if (( HS_RC == 0 )) && [[ -n "${HS_ANS}" && "${pg}" != ERROR && "${HS_ANS}" == "${pg}" ]]; then
        exact=1
    fi
    case "${rule}" in
        copy)
            if (( exact )); then
                ok=ok
            elif (( HS_RC == 1 )); then
                if [[ "${HS_ERR}" =~ [Bb]lock\ [0-9]+ && "${HS_ERR}" =~ [Ii]tem\ [0-9]+ ]]; then
                    ok=ok
                else
                    why="a refusal must name block N and item M"
                fi
            fi
            ;;
        strict)
            (( exact )) && ok=ok
            ;;
        lenient)
            if (( exact || HS_RC == 1 )); then ok=ok; fi
            ;;
        verify)
            if (( HS_RC == 3 )); then
                if [[ "${HS_ERR}" =~ [Bb]lock\ [0-9]+ ]]; then
                    ok=ok
                else
                    why="the message must name the block"
                fi
            else
                why="expected exit 3"
            fi
            ;;
        default)
            if (( exact || HS_RC == 1 || HS_RC == 3 )); then ok=ok; fi
            ;;
        *) die "judge: unknown rule ${rule}" ;;
    esac
    if [[ "${ok}" != ok && -z "${why}" ]]; then
        if (( HS_RC > 128 )); then
            why="crash or timeout"
        elif (( HS_RC != 0 && HS_RC != 1 )); then
            why="exit ${HS_RC} is not an answer or a refusal"
        elif (( HS_RC == 0 )) && [[ "${pg}" == ERROR ]]; then
            why="PostgreSQL cannot answer this, seqscan did"
        elif (( HS_RC == 0 )) && [[ -n "${HS_ANS}" ]]; then
            why="wrong answer"
        elif [[ "${rule}" == strict ]]; then
            why="must answer"
        fi
    fi
    verdict "${st}" "${qual}" "${mode}" "${shown}" "${HS_SHOW}" "${ok}" "${why}"
}

# quals_of NAME: print NAME's quals, one a line.
quals_of() {
    local extra=${T_QUALS[$1]}
    local -a more=()
    printf '%s\n' "${BASE_QUALS[@]}"
    if [[ -n "${extra}" ]]; then
        IFS=';' read -r -a more <<<"${extra}"
        printf '%s\n' "${more[@]}"
    fi
}

# ---------------------------------------------------------------------------
# PostgreSQL side
# ---------------------------------------------------------------------------

# Functions every cluster gets: the row generator and the answer oracle.
setup_functions() {
    sql_script <<'EOF' || die "creating the helper functions failed"
CREATE FUNCTION gen(lo int, hi int)
RETURNS TABLE (id int4, k int4, v int8, pad text)
LANGUAGE sql IMMUTABLE AS $$
    SELECT i, (i * 7919) % 1000000,
           (i::int8 * 2654435761) % 2000000000 - 500000000,
           repeat(chr(97 + i % 26), CASE WHEN i % 50 = 0 THEN 1200 ELSE (i % 7) * 40 END)
    FROM generate_series(lo, hi) AS i
$$;
-- PostgreSQL's answer to SELECT count(*), sum(v) FROM tbl WHERE qual, as
-- 'count|sum' (sum empty for NULL), or 'ERROR: message'.
CREATE FUNCTION pg_real_answer(tbl text, qual text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE c int8; s numeric;
BEGIN
    EXECUTE format('SELECT count(*), sum(v) FROM %I WHERE %s', tbl, qual) INTO c, s;
    RETURN c || '|' || coalesce(s::text, '');
EXCEPTION WHEN others THEN
    RETURN 'ERROR: ' || SQLERRM;
END
$$;
EOF
}

# pg_answers: PG_ANS for every table of this cluster, from NAME_ans.
pg_answers() {
    local values="" name qual line t qq rest
    for name in "${TABLES[@]}"; do
        [[ "${T_CLUSTER[${name}]}" == "${cluster}" ]] || continue
        while IFS= read -r qual; do
            values+="${values:+, }('${name}', '${qual}')"
        done < <(quals_of "${name}")
    done
    sql_or_die "SELECT t, q, pg_real_answer(t || '_ans', q) FROM (VALUES ${values}) AS x(t, q)"
    while IFS= read -r line; do
        t=${line%%|*}; rest=${line#*|}
        qq=${rest%%|*}; rest=${rest#*|}
        if [[ "${rest}" == ERROR* ]]; then
            PG_ANS["${t}|${qq}"]=ERROR
            PG_ERRMSG["${t}"]=${rest}
        else
            PG_ANS["${t}|${qq}"]=${rest}
        fi
    done <<<"${SQL_OUT}"
}

# relpaths_and_copy: T_REL of this cluster's tables, files copied to copy/.
relpaths_and_copy() {
    local name list="" line n r
    for name in "${TABLES[@]}"; do
        [[ "${T_CLUSTER[${name}]}" == "${cluster}" ]] || continue
        list+="${list:+, }('${name}')"
    done
    sql_or_die "SELECT n, pg_relation_filepath(n::regclass), pg_relation_size(n::regclass) FROM (VALUES ${list}) AS x(n)"
    while IFS='|' read -r n r line; do
        [[ "${r}" =~ ^base/[0-9]+/[0-9]+$ ]] || die "unexpected relation path for ${n}: '${r}'"
        (( line < 1024 * 1024 * 1024 )) || die "${n} is over 1 GiB: segments are not handled here"
        T_REL[${n}]=${r}
        cp -- "${DATA}/${r}" "${tmp}/copy/${n}"
        [[ "$(stat -c %s -- "${tmp}/copy/${n}")" == "${line}" ]] ||
            die "copy of ${n} (${r}) is not ${line} bytes"
    done <<<"${SQL_OUT}"
}

# summarize NAME: what pageinspect sees in NAME's pages (after the copy;
# get_raw_page neither sets hint bits nor prunes).
summarize() {
    local n=$1
    sql_or_die "SELECT pg_relation_size('${n}') / ${BLCKSZ},
  (SELECT count(*) FROM generate_series(0, pg_relation_size('${n}') / ${BLCKSZ} - 1) b
     WHERE (page_header(get_raw_page('${n}', b::int))).flags & 4 <> 0),
  count(*) FILTER (WHERE lp_flags = 1), count(*) FILTER (WHERE lp_flags = 2),
  count(*) FILTER (WHERE lp_flags = 3), count(*) FILTER (WHERE lp_flags = 0),
  count(*) FILTER (WHERE t_infomask & 768 = 256), count(*) FILTER (WHERE t_infomask & 768 = 512),
  count(*) FILTER (WHERE t_infomask & 768 = 768),
  count(*) FILTER (WHERE t_xmax::text <> '0'), count(*) FILTER (WHERE t_infomask & 1024 <> 0),
  count(*) FILTER (WHERE t_infomask & 2048 <> 0), count(*) FILTER (WHERE t_infomask & 4096 <> 0),
  count(*) FILTER (WHERE t_infomask & 128 <> 0),
  count(*) FILTER (WHERE t_infomask2 & 16384 <> 0), count(*) FILTER (WHERE t_infomask2 & 32768 <> 0),
  count(*) FILTER (WHERE t_infomask & 1 <> 0), count(*) FILTER (WHERE t_infomask & 4 <> 0),
  coalesce(string_agg(DISTINCT (t_infomask2 & 2047)::text, ','), '-')
FROM generate_series(0, pg_relation_size('${n}') / ${BLCKSZ} - 1) AS b,
     LATERAL heap_page_items(get_raw_page('${n}', b::int))"
    local nb av nn rd dd uu xc xi fz xs xmc xmi mu lo hu ho hn he na
    IFS='|' read -r nb av nn rd dd uu xc xi fz xs xmc xmi mu lo hu ho hn he na <<<"${SQL_OUT}"
    printf '%s:   %-19s %3s blk (%s all-visible) lp normal=%s redirect=%s dead=%s unused=%s | xmin committed=%s invalid=%s frozen=%s | xmax set=%s committed=%s invalid=%s multi=%s lock-only=%s | hot-updated=%s heap-only=%s | hasnull=%s external=%s natts=%s\n' \
        "${PROG}" "${n}" "${nb}" \
        "${av}" "${nn}" "${rd}" "${dd}" "${uu}" "${xc}" "${xi}" "${fz}" "${xs}" "${xmc}" "${xmi}" "${mu}" "${lo}" "${hu}" "${ho}" "${hn}" "${he}" "${na}"
}

# print_answers: PostgreSQL's answers of this cluster's tables.
print_answers() {
    local name qual line
    log "PostgreSQL's answers (count|sum from NAME_ans; ERROR when the query fails):"
    for name in "${TABLES[@]}"; do
        [[ "${T_CLUSTER[${name}]}" == "${cluster}" ]] || continue
        line=""
        while IFS= read -r qual; do
            line+="  [${qual}] ${PG_ANS["${name}|${qual}"]:-?}"
        done < <(quals_of "${name}")
        printf '%s:   %-17s%s\n' "${PROG}" "${name}" "${line}"
        if [[ -n "${PG_ERRMSG[${name}]:-}" ]]; then
            printf '%s:   %-17s  (%s)\n' "${PROG}" "" "${PG_ERRMSG[${name}]}"
        fi
    done
}

# server_running_refusal NAME: --pgdata on the running cluster is refused.
server_running_refusal() {
    local n=$1 why=""
    hs --json --cache asis --pgdata "${DATA}" --where "k = -1" "${T_REL[${n}]}"
    if (( HS_RC != 1 )); then
        why="expected exit 1"
    elif ! grep -q -i -E 'postmaster\.pid|running' "${tmp}/out/ss.err"; then
        why="the message must mention postmaster.pid or a running server"
    fi
    verdict "${n}" "k = -1" "pgdata-live" "refused (server running)" "${HS_SHOW}" \
        "$([[ -z "${why}" ]] && echo ok || echo FAIL)" "${why}"
}

# scan_copies RULE-FOR-CHECKSUM-RUN CHECKSUM-ARGS...: every qual on every copy.
scan_copies() {
    local mode=$1 name qual rule
    shift
    for name in "${TABLES[@]}"; do
        [[ "${T_CLUSTER[${name}]}" == "${cluster}" ]] || continue
        rule=copy
        [[ "${T_STRICT_COPY[${name}]:-0}" == 1 ]] && rule=strict
        while IFS= read -r qual; do
            hs --json --cache asis "$@" --where "${qual}" "${tmp}/copy/${name}"
            judge "${name}" "${qual}" "${mode}" "${rule}"
        done < <(quals_of "${name}")
    done
}

# scan_copies_once MODE RULE [ARGS...]: one qual per copy (k >= 500000).
scan_copies_once() {
    local mode=$1 rule=$2 name
    shift 2
    for name in "${TABLES[@]}"; do
        [[ "${T_CLUSTER[${name}]}" == "${cluster}" ]] || continue
        hs --json --cache asis "$@" --where "k >= 500000" "${tmp}/copy/${name}"
        judge "${name}" "k >= 500000" "${mode}" "${rule}"
    done
}

# scan_pgdata DIR: every qual of every table through --pgdata DIR.
scan_pgdata() {
    local dir=$1 name qual rule
    for name in "${TABLES[@]}"; do
        [[ "${T_CLUSTER[${name}]}" == "${cluster}" ]] || continue
        rule=strict
        [[ "${T_KIND[${name}]}" == t ]] || rule=lenient
        while IFS= read -r qual; do
            hs --json --cache asis --pgdata "${dir}" --where "${qual}" "${T_REL[${name}]}"
            judge "${name}" "${qual}" "pgdata" "${rule}"
        done < <(quals_of "${name}")
    done
}

# files_unchanged: NAME's file after the shutdown is the copy (informational).
files_unchanged() {
    local name changed=""
    for name in "${TABLES[@]}"; do
        [[ "${T_CLUSTER[${name}]}" == "${cluster}" ]] || continue
        cmp -s -- "${DATA}/${T_REL[${name}]}" "${tmp}/copy/${name}" || changed+=" ${name}"
    done
    if [[ -n "${changed}" ]]; then
        log "note: changed between the copy and the shutdown:${changed}"
    else
        log "every relation file is byte-identical to its copy after the shutdown"
    fi
}

# need_extension NAME
need_extension() {
    sql_or_die "SELECT count(*) FROM pg_available_extensions WHERE name = '$1'"
    [[ "${SQL_OUT}" == 1 ]] || skip_or_fail "the $1 extension is not installed for ${PG_BINDIR}"
    sql_or_die "CREATE EXTENSION $1"
}

# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

start_time=${SECONDS}
log "PostgreSQL: $("${PG_BINDIR}/postgres" --version) (${PG_BINDIR})"
log "seqscan: ${SEQSCAN}"
if (( PGL_IS_ROOT )); then
    log "running as root: server runs as '${PGL_USER}'"
fi

# Harness self-check (informational): does seqscan read its own files?
if [[ -n "${MKHEAP_BIN}" ]]; then
    if "${MKHEAP_BIN}" --rows 100 --force --quiet "${tmp}/out/mk.heap" >/dev/null 2>&1; then
        hs --json --cache asis --where "k >= 500000" "${tmp}/out/mk.heap"
        log "self-check: seqscan on a 100-row mkheap file: ${HS_SHOW}"
    fi
fi

# ===== Cluster 1: no data checksums =========================================

DATA="${tmp}/data"
SERVER_LOG="${tmp}/server.log"
log "cluster 1 (no data checksums) in ${DATA}"
pgl_initdb "${DATA}"
pgl_write_conf "${DATA}" "${tmp}" "${PORT1}" 'max_prepared_transactions = 5'
pgl_start "${DATA}" "${SERVER_LOG}"
pgl_connect "${tmp}" "${PORT1}" "${SERVER_LOG}"
sql_or_die "SHOW data_checksums"
[[ "${SQL_OUT}" == off ]] || die "cluster 1 has data checksums on"
need_extension dblink
need_extension pageinspect
setup_functions
CONN="host=${tmp} port=${PORT1} dbname=postgres user=postgres"
sql_or_die "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
have_lz4=0
[[ "${SQL_OUT}" == t ]] && have_lz4=1

log "building the tables (every state twice: NAME for seqscan, NAME_ans for PostgreSQL)"

state fresh t "inserted, never read, CHECKPOINT: no hint bits"
create; ins 1 "${NROWS}"; build

state deleted t "DELETE of every third row, committed, not read since"
create; ins 1 "${NROWS}"; q BEGIN; b "DELETE FROM @T WHERE id % 3 = 0"; q COMMIT; build

state upd_hot t "fillfactor 50: HOT UPDATEs (twice on some rows: chains)"
create "WITH (fillfactor = 50)"; ins 1 "${NROWS}"
b "UPDATE @T SET v = v + 7, k = k + 1 WHERE id % 4 = 0"
b "UPDATE @T SET v = v + 7 WHERE id % 8 = 0"
build

state upd_cold t "fillfactor 100, pad grows by 300 bytes: non-HOT UPDATEs"
create "WITH (fillfactor = 100)"; ins 1 "${NROWS}"
b "UPDATE @T SET pad = pad || repeat('y', 300), v = v - 3 WHERE id % 5 = 0"
build

state delupd t "DELETEs and UPDATEs (HOT and not) in several committed transactions"
create; ins 1 "${NROWS}"
b "DELETE FROM @T WHERE id % 3 = 0"
b "UPDATE @T SET k = k + 500000 WHERE id % 3 = 1 AND id % 2 = 0"
b "UPDATE @T SET pad = pad || repeat('z', 400) WHERE id % 11 = 1"
b "DELETE FROM @T WHERE id % 10 = 4"
build

state aborted t "aborted INSERT, DELETE and UPDATE mixed with committed rows"
create; ins 1 "${NROWS}"
q BEGIN; b "INSERT INTO @T SELECT * FROM gen(1001, 1300)"; q ROLLBACK
q BEGIN; b "DELETE FROM @T WHERE id % 4 = 0"; q ROLLBACK
q BEGIN; b "UPDATE @T SET v = 0, k = 999999 WHERE id % 6 = 1"; q ROLLBACK
ins 1301 1400
build

state subxact t "SAVEPOINT / ROLLBACK TO / RELEASE, nested; an aborted top with a released subxact"
create
q BEGIN
b "INSERT INTO @T SELECT * FROM gen(1, 300)"
q "SAVEPOINT a"; b "INSERT INTO @T SELECT * FROM gen(301, 600)"; q "ROLLBACK TO a"
q "SAVEPOINT b1"; b "INSERT INTO @T SELECT * FROM gen(601, 900)"; q "RELEASE b1"
q "SAVEPOINT c"; b "DELETE FROM @T WHERE id % 10 = 0"; q "ROLLBACK TO c"
q "SAVEPOINT d"; b "DELETE FROM @T WHERE id % 10 = 1" "UPDATE @T SET v = v + 1 WHERE id % 10 = 2"; q "RELEASE d"
q "SAVEPOINT e"; b "INSERT INTO @T SELECT * FROM gen(901, 950)"
q "SAVEPOINT f"; b "INSERT INTO @T SELECT * FROM gen(951, 1000)"; q "ROLLBACK TO f"; q "RELEASE e"
q COMMIT
q BEGIN; q "SAVEPOINT s"; b "INSERT INTO @T SELECT * FROM gen(2001, 2100)"; q "RELEASE s"; q ROLLBACK
build

state samexact t "INSERT, UPDATE and DELETE of the same rows in one transaction"
create
q BEGIN
b "INSERT INTO @T SELECT * FROM gen(1, ${NROWS})"
b "UPDATE @T SET v = v * 2 WHERE id % 5 = 0"
b "DELETE FROM @T WHERE id % 7 = 0"
q COMMIT
build

for mode in "UPDATE:lock_upd" "NO KEY UPDATE:lock_nokey" "SHARE:lock_share" "KEY SHARE:lock_keyshare"; do
    state "${mode#*:}" t "every third row locked by a committed SELECT ... FOR ${mode%%:*}"
    create; ins 1 "${NROWS}"
    q BEGIN
    b "SELECT count(*) FROM (SELECT 1 FROM @T WHERE id % 3 = 0 FOR ${mode%%:*}) AS s"
    q COMMIT
    build
done

state lock_aborted t "rows locked FOR UPDATE by a transaction that rolled back"
create; ins 1 "${NROWS}"
q BEGIN; b "SELECT count(*) FROM (SELECT 1 FROM @T WHERE id % 3 = 0 FOR UPDATE) AS s"; q ROLLBACK
build

state mx_upd t "MultiXact: FOR KEY SHARE locker + committed UPDATE from a dblink session"
create; ins 1 "${NROWS}"
q BEGIN
b "SELECT count(*) FROM (SELECT 1 FROM @T WHERE id % 4 = 0 FOR KEY SHARE) AS s"
q "SELECT dblink_exec('${CONN}', 'UPDATE mx_upd SET v = v + 1 WHERE id % 8 = 0; UPDATE mx_upd_ans SET v = v + 1 WHERE id % 8 = 0')"
q COMMIT
build

state mx_upd_abort t "MultiXact: FOR KEY SHARE locker + an UPDATE (dblink) that rolled back"
create; ins 1 "${NROWS}"
q BEGIN
b "SELECT count(*) FROM (SELECT 1 FROM @T WHERE id % 4 = 0 FOR KEY SHARE) AS s"
q "SELECT dblink_exec('${CONN}', 'BEGIN; UPDATE mx_upd_abort SET v = v + 1 WHERE id % 8 = 0; UPDATE mx_upd_abort_ans SET v = v + 1 WHERE id % 8 = 0; ROLLBACK')"
q COMMIT
build

state mx_lock2 t "MultiXact of two lockers only: FOR SHARE from two sessions"
create; ins 1 "${NROWS}"
q BEGIN
b "SELECT count(*) FROM (SELECT 1 FROM @T WHERE id % 4 = 0 FOR SHARE) AS s"
q "SELECT dblink_exec('${CONN}', 'DO \$d\$ BEGIN PERFORM 1 FROM mx_lock2 WHERE id % 4 = 0 FOR SHARE; PERFORM 1 FROM mx_lock2_ans WHERE id % 4 = 0 FOR SHARE; END \$d\$')"
q COMMIT
build

state unhinted t "read (hinted), CHECKPOINT, then a last UPDATE never read"
create; ins 1 "${NROWS}"
b "SELECT count(*) FROM @T"
q CHECKPOINT
b "UPDATE @T SET v = v + 100, pad = pad || 'u' WHERE id % 4 = 0"
build

state hinted t "DELETE and UPDATE, then read by PostgreSQL: hint bits set, pages pruned"
create; ins 1 "${NROWS}"
b "DELETE FROM @T WHERE id % 3 = 0" "UPDATE @T SET v = v + 1 WHERE id % 5 = 1"
b "SELECT count(*) FROM @T"
build

state vacuumed t "DELETE and UPDATE, then VACUUM"
create; ins 1 "${NROWS}"
b "DELETE FROM @T WHERE id % 3 = 0" "UPDATE @T SET v = v + 1 WHERE id % 5 = 1" "VACUUM @T"
build

state frozen t "DELETE and UPDATE, then VACUUM FREEZE"
create; ins 1 "${NROWS}"
b "DELETE FROM @T WHERE id % 3 = 0" "UPDATE @T SET v = v + 1 WHERE id % 5 = 1" "VACUUM (FREEZE) @T"
build

state vac_more t "VACUUM, then a DELETE and an INSERT never read"
create; ins 1 "${NROWS}"
b "DELETE FROM @T WHERE id % 3 = 0" "VACUUM @T" "DELETE FROM @T WHERE id % 7 = 0"
ins 1001 1100
build

state nulls_id t "id NULL in 10% of the rows" "id != 0" "id > 500"
create
q BEGIN; b "INSERT INTO @T SELECT CASE WHEN id % 10 = 1 THEN NULL ELSE id END, k, v, pad FROM gen(1, ${NROWS})"; q COMMIT
build

state nulls_k t "k NULL in 10% of the rows" "k != 0"
create
q BEGIN; b "INSERT INTO @T SELECT id, CASE WHEN id % 10 = 2 THEN NULL ELSE k END, v, pad FROM gen(1, ${NROWS})"; q COMMIT
build

state nulls_v t "v NULL in 10% of the rows" "v <> 0"
create
q BEGIN; b "INSERT INTO @T SELECT id, k, CASE WHEN id % 10 = 3 THEN NULL ELSE v END, pad FROM gen(1, ${NROWS})"; q COMMIT
build

state nulls_pad t "pad NULL in 10% of the rows"
create
q BEGIN; b "INSERT INTO @T SELECT id, k, v, CASE WHEN id % 10 = 4 THEN NULL ELSE pad END FROM gen(1, ${NROWS})"; q COMMIT
build

state nulls_all t "NULLs in every column, some rows with several" "id != 0" "k != 0" "v <> 0"
create
q BEGIN
b "INSERT INTO @T SELECT CASE WHEN id % 10 IN (1, 5) THEN NULL ELSE id END,
    CASE WHEN id % 10 IN (2, 5, 6) THEN NULL ELSE k END,
    CASE WHEN id % 10 IN (3, 5, 6) THEN NULL ELSE v END,
    CASE WHEN id % 10 IN (4, 6) THEN NULL ELSE pad END FROM gen(1, ${NROWS})"
q COMMIT
build

state v_all_null t "v NULL in every row: sum(v) is NULL though rows match"
create
q BEGIN; b "INSERT INTO @T SELECT id, k, NULL, pad FROM gen(1, 300)"; q COMMIT
build

# TOAST: 5000 x's compress inline (pglz); md5 hex does not compress, so 4800
# bytes of it go out of line; md5 + 32 z's compress to about half, still
# over the threshold: compressed and external.
TOAST_PAD="CASE WHEN id % 4 = 0 THEN repeat('x', 5000)
    WHEN id % 4 = 1 THEN (SELECT string_agg(md5(id::text || '-' || j::text), '') FROM generate_series(1, 150) AS j)
    WHEN id % 4 = 2 THEN (SELECT string_agg(md5(id::text || '+' || j::text) || repeat('z', 32), '') FROM generate_series(1, 150) AS j)
    ELSE pad END"

state toast t "TOAST (pglz): pad compressed inline, external, compressed external"
create; q BEGIN; b "INSERT INTO @T SELECT id, k, v, ${TOAST_PAD} FROM gen(1, 400)"; q COMMIT
build

state toast_ext t "ALTER pad SET STORAGE EXTERNAL: 5000 x's out of line, uncompressed"
create; b "ALTER TABLE @T ALTER pad SET STORAGE EXTERNAL"
q BEGIN; b "INSERT INTO @T SELECT id, k, v, CASE WHEN id % 3 = 0 THEN repeat('x', 5000) ELSE pad END FROM gen(1, 400)"; q COMMIT
build

if (( have_lz4 )); then
    state toast_lz4 t "TOAST with default_toast_compression = lz4"
    create; q "SET default_toast_compression = lz4"
    q BEGIN; b "INSERT INTO @T SELECT id, k, v, ${TOAST_PAD} FROM gen(1, 400)"; q COMMIT
    build
else
    log "note: the server has no lz4: no toast_lz4 table"
fi

state bigsum t "v = 9e18, 9e18, -5: sum 17999999999999999995, past 2^63"
create
q BEGIN; b "INSERT INTO @T VALUES (1, 1, 9000000000000000000, 'a'), (2, 2, 9000000000000000000, 'b'), (3, 600000, -5, 'c')"; q COMMIT
build

state bigsum2 t "int8 extremes: sums past 2^64 and below -2^63" "k != 1"
create
q BEGIN
b "INSERT INTO @T VALUES (1, 1, 9000000000000000000, 'a'), (2, 2, 9000000000000000000, 'b'),
    (3, 3, 9223372036854775807, 'c'), (4, 600000, 9223372036854775807, 'd'),
    (5, 700000, -9223372036854775808, 'e'), (6, 800000, -9223372036854775808, 'f'),
    (7, 900000, -9223372036854775808, 'g'), (8, 4, -1, 'h')"
q COMMIT
build

# Other schemas and ALTERed tables.
state s_ab other "(a int8, b text)"
b "CREATE TABLE @T (a int8, b text)"
q BEGIN; b "INSERT INTO @T SELECT id, pad FROM gen(1, ${NROWS})"; q COMMIT
build

state s_abcd other "(a int8, b int8, c int8, d text): 4 columns like t"
b "CREATE TABLE @T (a int8, b int8, c int8, d text)"
q BEGIN; b "INSERT INTO @T SELECT id, k, v, pad FROM gen(1, ${NROWS})"; q COMMIT
build

state s_kint8 other "(id int4, k int8, v int8, pad text): k wider"
b "CREATE TABLE @T (id int4, k int8, v int8, pad text)"
q BEGIN; b "INSERT INTO @T SELECT * FROM gen(1, ${NROWS})"; q COMMIT
build

state s_extra other "(id, k, v, pad, extra int4) with rows"
b "CREATE TABLE @T (${TCOLS}, extra int4)"
q BEGIN; b "INSERT INTO @T SELECT *, id % 13 FROM gen(1, ${NROWS})"; q COMMIT
build

state s_varchar other "(id int4, k int4, v int8, pad varchar): same physical shape"
b "CREATE TABLE @T (id int4, k int4, v int8, pad varchar)"
q BEGIN; b "INSERT INTO @T SELECT * FROM gen(1, ${NROWS})"; q COMMIT
build

state alt_add other "t, then ADD COLUMN extra int4, no new rows"
create; ins 1 "${NROWS}"; b "ALTER TABLE @T ADD COLUMN extra int4"
build

state alt_add_rows other "t, ADD COLUMN extra int4, then new rows with extra"
create; ins 1 "${NROWS}"; b "ALTER TABLE @T ADD COLUMN extra int4"
q BEGIN; b "INSERT INTO @T SELECT *, id % 13 FROM gen(1001, 1300)"; q COMMIT
build

state alt_add_default other "t, ADD COLUMN extra int4 DEFAULT 42 (a missing value), new rows"
create; ins 1 "${NROWS}"; b "ALTER TABLE @T ADD COLUMN extra int4 DEFAULT 42"
q BEGIN; b "INSERT INTO @T SELECT *, id % 13 FROM gen(1001, 1300)"; q COMMIT
build

state alt_drop_pad other "t, DROP COLUMN pad, new rows"
create; ins 1 "${NROWS}"; b "ALTER TABLE @T DROP COLUMN pad"
q BEGIN; b "INSERT INTO @T SELECT id, k, v FROM gen(1001, 1300)"; q COMMIT
build

state alt_drop_k other "t, DROP COLUMN k, ADD COLUMN k int4: old rows keep the dropped k"
create; ins 1 "${NROWS}"
b "ALTER TABLE @T DROP COLUMN k" "ALTER TABLE @T ADD COLUMN k int4"
q BEGIN; b "INSERT INTO @T (id, v, pad, k) SELECT id, v, pad, k FROM gen(1001, 1300)"; q COMMIT
b "UPDATE @T SET k = 600000 + id WHERE id <= 1000 AND id % 10 = 0"
build

# Last: a prepared transaction holds back the xmin horizon of every VACUUM
# and prune after it.
state prepared t "PREPARE TRANSACTION of an INSERT, a DELETE and an UPDATE, left prepared"
create; ins 1 "${NROWS}"
q BEGIN
b "INSERT INTO @T SELECT * FROM gen(1001, 1200)" "DELETE FROM @T WHERE id % 10 = 0" "UPDATE @T SET v = v + 1 WHERE id % 10 = 5"
q "PREPARE TRANSACTION 'pg_real_prepared'"
build

sql_or_die "CHECKPOINT"
relpaths_and_copy
pg_answers
print_answers

log "state of each table's pages (pageinspect on NAME after the copy; a few NAME_ans for contrast):"
for name in "${TABLES[@]}"; do
    log "  ${name}: ${T_DESC[${name}]}"
    summarize "${name}"
    case "${name}" in
        fresh|unhinted|deleted|hinted) summarize "${name}_ans" ;;
    esac
done
sql_or_die "SELECT gid FROM pg_prepared_xacts"
log "prepared transactions: ${SQL_OUT//$'\n'/ }"

log "--pgdata on the running cluster must be refused"
server_running_refusal fresh

pgl_stop_fast "${DATA}" "${SERVER_LOG}"
log "cluster 1 stopped; pg_twophase holds: $(find "${DATA}/pg_twophase" -mindepth 1 -printf '%f ')"
files_unchanged

log "copied files, --checksum none (and once with the default checksum mode):"
scan_copies copy --checksum none
scan_copies_once copy-dflt default
log "--pgdata on the stopped cluster:"
scan_pgdata "${DATA}"

# ===== Cluster 2: initdb -k (data checksums) ================================

cluster=2
DATA="${tmp}/data2"
SERVER_LOG="${tmp}/server2.log"
log "cluster 2 (initdb -k: data checksums) in ${DATA}"
pgl_initdb "${DATA}" -k
pgl_write_conf "${DATA}" "${tmp}" "${PORT2}"
pgl_start "${DATA}" "${SERVER_LOG}"
pgl_connect "${tmp}" "${PORT2}" "${SERVER_LOG}"
sql_or_die "SHOW data_checksums"
[[ "${SQL_OUT}" == on ]] || die "cluster 2 has no data checksums"
need_extension pageinspect
setup_functions

state cs t "checksums; DELETE, UPDATE, then read: every tuple hinted"
create; ins 1 2000
b "DELETE FROM @T WHERE id % 3 = 0" "UPDATE @T SET v = v + 1 WHERE id % 5 = 1" "SELECT count(*) FROM @T"
build
T_STRICT_COPY[cs]=1

state cs_fresh t "checksums; inserted and DELETE, never read"
create; ins 1 2000
b "DELETE FROM @T WHERE id % 3 = 0"
build

sql_or_die "CHECKPOINT"
relpaths_and_copy
pg_answers
print_answers
for name in cs cs_fresh; do
    summarize "${name}"
done
pgl_stop_fast "${DATA}" "${SERVER_LOG}"
files_unchanged

log "copied files, --checksum postgres (cs is fully hinted: it must be answered):"
scan_copies copy-pgsum --checksum postgres
log "copied files, heapscan's checksum (explicit and default) must fail verification:"
scan_copies_once copy-hssum verify --checksum heapscan
scan_copies_once copy-dflt verify
log "--pgdata on the stopped cluster (checksums from pg_control):"
scan_pgdata "${DATA}"

# The oracle: pg_checksums agrees the pages are fine, then sees the damage.
ck_ok=FAIL
if as_pg "${PG_BINDIR}/pg_checksums" --check -D "${DATA}" >"${tmp}/out/ck.out" 2>&1; then
    ck_ok=ok
fi
verdict "(cluster 2)" "-" "pg_checksums" "all checksums good" \
    "$(grep -m 1 -E 'Bad checksums' "${tmp}/out/ck.out" | tr -s ' ' || true)" "${ck_ok}"

# flip_tuple_byte FILE BLOCK: change k's first byte of the first normal item.
flip_tuple_byte() {
    local file=$1 blk=$2 base lower i lp off flags hoff pos old new
    base=$((blk * BLCKSZ))
    lower=$(od -An -tu2 -j $((base + 12)) -N2 -- "${file}" | tr -d ' ')
    for (( i = 1; i <= (lower - 24) / 4; i++ )); do
        lp=$(od -An -tu4 -j $((base + 24 + (i - 1) * 4)) -N4 -- "${file}" | tr -d ' ')
        off=$((lp & 0x7fff)); flags=$(((lp >> 15) & 3))
        (( flags == 1 )) && break
    done
    (( flags == 1 )) || die "no normal item on block ${blk} of ${file}"
    hoff=$(od -An -tu1 -j $((base + off + 22)) -N1 -- "${file}" | tr -d ' ')
    pos=$((base + off + hoff + 4))
    old=$(od -An -tu1 -j "${pos}" -N1 -- "${file}" | tr -d ' ')
    new=$((old ^ 0x5a))
    # shellcheck disable=SC2059  # the format is an octal escape on purpose
    printf "\\$(printf '%03o' "${new}")" |
        dd of="${file}" bs=1 seek="${pos}" count=1 conv=notrunc status=none
    log "flipped byte ${pos} of ${file##*/} (block ${blk}, item ${i}, k's first byte): ${old} -> ${new}"
}

BAD="${tmp}/data2-bad"
cp -a -- "${DATA}" "${BAD}"
flip_tuple_byte "${BAD}/${T_REL[cs]}" 1
ck_ok=FAIL
if ! as_pg "${PG_BINDIR}/pg_checksums" --check -D "${BAD}" >"${tmp}/out/ck.out" 2>&1 &&
   grep -q -E 'block 1:' "${tmp}/out/ck.out"; then
    ck_ok=ok
fi
verdict "(cluster 2 bad)" "-" "pg_checksums" "block 1 fails" "$(grep -m 1 'block' "${tmp}/out/ck.out" || true)" "${ck_ok}"

hs --json --cache asis --pgdata "${BAD}" --where "k >= 500000" "${T_REL[cs]}"
why=""
if (( HS_RC != 3 )); then
    why="expected exit 3"
elif ! [[ "${HS_ERR}" =~ [Bb]lock\ 1([^0-9]|$) ]]; then
    why="the message must name block 1"
fi
verdict "cs (byte flipped)" "k >= 500000" "pgdata-bad" "exit 3, block 1" "${HS_SHOW}" \
    "$([[ -z "${why}" ]] && echo ok || echo FAIL)" "${why}"

# A cluster that crashed (stop -m immediate) after a committed DELETE whose
# pages and pg_xact only the WAL holds: its files are not what PostgreSQL
# will read after recovery.  --pgdata must refuse, or give the answer
# PostgreSQL gives after recovery (which is the answer from cs_ans here).
CRASH="${tmp}/data2-crash"
cp -a -- "${DATA}" "${CRASH}"
pgl_start "${CRASH}" "${tmp}/server-crash.log"
sql_or_die "DELETE FROM cs WHERE id % 7 = 0; DELETE FROM cs_ans WHERE id % 7 = 0"
sql_or_die "SELECT pg_real_answer('cs_ans', 'k >= 500000')"
[[ "${SQL_OUT}" == [0-9]*'|'* ]] || die "PostgreSQL's answer on the crash copy: ${SQL_OUT}"
PG_ANS["cs (crashed)|k >= 500000"]=${SQL_OUT}
as_pg "${PG_BINDIR}/pg_ctl" -D "${CRASH}" -m immediate -w -t 60 stop >/dev/null 2>&1 ||
    die "pg_ctl stop -m immediate failed for ${CRASH}"
[[ ! -e "${CRASH}/postmaster.pid" ]] || die "postmaster.pid is left in ${CRASH}"
log "crashed copy: pg_controldata says '$(as_pg "${PG_BINDIR}/pg_controldata" -D "${CRASH}" |
    sed -n 's/^Database cluster state: *//p')'"
hs --json --cache asis --pgdata "${CRASH}" --where "k >= 500000" "${T_REL[cs]}"
judge "cs (crashed)" "k >= 500000" "pgdata-crash" lenient

# ===== Summary ==============================================================

log "took $((SECONDS - start_time))s"
if grep -q -E '(PANIC|FATAL):' "${tmp}/server.log" "${tmp}/server2.log"; then
    warn "server logs contain problems:"
    grep -h -E '(PANIC|FATAL):' "${tmp}/server.log" "${tmp}/server2.log" |
        head -n 20 | sed 's/^/    /' >&2 || true
fi
tally=""
for m in pgdata-live copy copy-dflt pgdata copy-pgsum copy-hssum pg_checksums pgdata-bad pgdata-crash; do
    [[ -n "${MODE_ALL[${m}]:-}" ]] && tally+=" ${m} ${MODE_OK[${m}]:-0}/${MODE_ALL[${m}]}"
done
log "passed by mode:${tally}"
printf '%s: %d passed, %d failed\n' "${PROG}" "${passed}" "${failed}"
(( failed == 0 )) || exit 1
exit 0
