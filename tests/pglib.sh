# shellcheck shell=bash
#
# pglib.sh - shared helpers for the tests that run a private PostgreSQL 15
# cluster (pg_compat.sh, pg_real.sh).  Source it after setting PROG (the
# name messages start with); it defines functions and globals and runs
# nothing by itself.
#
# The recipe: a private temporary directory (mktemp, handed to the server
# user), clusters inside it, Unix socket in that directory only (no TCP),
# the server run as an unprivileged user (PG_COMPAT_USER, default nobody)
# via runuser or setpriv when the test runs as root.  Every cluster started
# with pgl_start is stopped (immediate, then SIGKILL of its postmaster) and
# the directory removed by pgl_cleanup, which pgl_install_traps installs on
# EXIT.  PostgreSQL 15 missing: skip with 77, or fail when
# HEAPSCAN_REQUIRE_PG=1.
#
# Globals, all upper case (so shellcheck also accepts a sourcing script
# checked without -x), set here and read by the sourcing script:
#   PGL_TMP        the private temporary directory ("" before pgl_make_tmp)
#   PGL_IS_ROOT, PGL_USER, PGL_UID, PGL_GID   who runs the server
#   PG_BINDIR      PostgreSQL 15 bin directory (after pgl_find_bindir)
#   PGL_FAILURES   number of fail_check calls
#   SQL_OUT        output of the last sql / sql_script
# and internal ones: PGL_SOCKDIR, PGL_PORT, PGL_LOG (set by pgl_connect),
# PGL_CLUSTERS (data directories pgl_start started: stopped on exit).

: "${PROG:?set PROG before sourcing pglib.sh}"

# Meson's status for a skipped test.
readonly PGL_SKIP=77

# shellcheck disable=SC2034  # read by the sourcing scripts
{
PGL_TMP=""
PGL_IS_ROOT=0
PGL_USER=""
PGL_UID=""
PGL_GID=""
PGL_HAVE_RUNUSER=0
PGL_FAILURES=0
SQL_OUT=""
PGL_SOCKDIR=""
PGL_PORT=""
PGL_LOG=""
PGL_CLUSTERS=()
}

log()  { printf '%s: %s\n' "${PROG}" "$*"; }
warn() { printf '%s: %s\n' "${PROG}" "$*" >&2; }
die()  { printf '%s: FAIL: %s\n' "${PROG}" "$*" >&2; exit 1; }

# Record a failed check but keep going, so one run shows every problem.
fail_check() {
    PGL_FAILURES=$((PGL_FAILURES + 1))
    printf '%s: FAIL: %s\n' "${PROG}" "$*" >&2
}

# PostgreSQL (or a tool the test needs) unavailable: skip (77), or fail if
# HEAPSCAN_REQUIRE_PG=1.
skip_or_fail() {
    if [[ "${HEAPSCAN_REQUIRE_PG:-0}" == 1 ]]; then
        die "$* (HEAPSCAN_REQUIRE_PG=1, so this is an error)"
    fi
    log "SKIP: $*"
    exit "${PGL_SKIP}"
}

# ---------------------------------------------------------------------------
# Running things as the PostgreSQL server user
# ---------------------------------------------------------------------------

as_pg() {
    if (( PGL_IS_ROOT )); then
        if (( PGL_HAVE_RUNUSER )); then
            runuser -u "${PGL_USER}" -- "$@"
        else
            setpriv --reuid="${PGL_UID}" --regid="${PGL_GID}" --clear-groups -- "$@"
        fi
    else
        "$@"
    fi
}

# PostgreSQL refuses to run as root: pick the user that runs the server.
pgl_setup_user() {
    [[ "$(id -u)" -eq 0 ]] || return 0
    PGL_IS_ROOT=1
    PGL_USER=${PG_COMPAT_USER:-nobody}
    PGL_UID=$(id -u "${PGL_USER}" 2>/dev/null) ||
        skip_or_fail "running as root but user '${PGL_USER}' does not exist to run the server"
    PGL_GID=$(id -g "${PGL_USER}")
    [[ "${PGL_UID}" -ne 0 ]] || die "PG_COMPAT_USER must not be root"
    if command -v runuser >/dev/null 2>&1; then
        PGL_HAVE_RUNUSER=1
    elif ! command -v setpriv >/dev/null 2>&1; then
        skip_or_fail "running as root and neither runuser nor setpriv is available to drop privileges"
    fi
}

# Keep the client/server environment predictable.
pgl_clean_env() {
    unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE \
          PGSERVICE PGSERVICEFILE PGOPTIONS PGDATA PGSSLMODE PGAPPNAME \
          PGCONNECT_TIMEOUT PGTZ PGDATESTYLE PGCLIENTENCODING PGSYSCONFDIR \
          PGTARGETSESSIONATTRS
    export LC_ALL=C
}

# ---------------------------------------------------------------------------
# Cleanup
# ---------------------------------------------------------------------------

# pgl_stop_now DATA: stop a cluster at once, whatever state it is in.
# (shellcheck cannot see that trap handlers are reachable.)
# shellcheck disable=SC2317
pgl_stop_now() {
    local data=$1 pidfile="$1/postmaster.pid" pid=""
    [[ -n "${data}" && -f "${pidfile}" ]] || return 0
    as_pg "${PG_BINDIR}/pg_ctl" -D "${data}" -m immediate -w -t 30 stop \
        >/dev/null 2>&1 || true
    if [[ -f "${pidfile}" ]]; then
        # pg_ctl could not stop it: kill the postmaster we started, by pid.
        read -r pid <"${pidfile}" || true
        if [[ "${pid}" =~ ^[1-9][0-9]*$ ]] && kill -0 "${pid}" 2>/dev/null; then
            kill -KILL "${pid}" 2>/dev/null || true
        fi
    fi
}

# shellcheck disable=SC2317
pgl_cleanup() {
    local d
    set +e
    trap - ERR
    if [[ -n "${PGL_TMP}" && -d "${PGL_TMP}" ]]; then
        for d in "${PGL_CLUSTERS[@]}"; do
            pgl_stop_now "${d}"
        done
        cd / || true
        rm -rf -- "${PGL_TMP}"
    fi
}

pgl_install_traps() {
    trap 'printf "%s: FAIL: unexpected error (status %s) at line %s: %s\n" "${PROG}" "$?" "${LINENO}" "${BASH_COMMAND}" >&2' ERR
    trap pgl_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# ---------------------------------------------------------------------------
# Locating binaries
# ---------------------------------------------------------------------------

# Print an absolute path for an executable given as a path or a command name.
abs_exe() {
    local p=$1
    if [[ "${p}" != */* ]]; then
        p=$(command -v -- "${p}" 2>/dev/null) || return 1
    fi
    [[ -f "${p}" && -x "${p}" ]] || return 1
    [[ "${p}" == /* ]] || p="${PWD}/${p}"
    printf '%s\n' "${p}"
}

abs_dir() {
    (cd -- "$1" 2>/dev/null && pwd)
}

is_pg15_bindir() {
    local d=$1 v re='\(PostgreSQL\) 15([^0-9]|$)'
    [[ -n "${d}" && -x "${d}/postgres" ]] || return 1
    v=$("${d}/postgres" --version 2>/dev/null) || return 1
    [[ "${v}" =~ ${re} ]]
}

# required_exe VAR: VAR must name an executable; replace it by its absolute path.
required_exe() {
    local var=$1 val=${!1:-} p
    [[ -n "${val}" ]] || die "environment variable ${var} is not set (path to the ${var,,} binary)"
    p=$(abs_exe "${val}") || die "${var}=${val} is not an executable file"
    printf -v "${var}" '%s' "${p}"
}

# pgl_find_bindir [PROGRAM...]: set PG_BINDIR (from the environment, else
# `pg_config --bindir` if that is a v15 server, else
# /usr/lib/postgresql/15/bin) and check it holds PostgreSQL 15 with initdb,
# pg_ctl, postgres, psql and every PROGRAM; skip (or fail) otherwise.
pgl_find_bindir() {
    local cand="" b
    if [[ -z "${PG_BINDIR:-}" ]]; then
        if command -v pg_config >/dev/null 2>&1; then
            cand=$(pg_config --bindir 2>/dev/null) || cand=""
        fi
        if is_pg15_bindir "${cand}"; then
            PG_BINDIR=${cand}
        else
            PG_BINDIR=/usr/lib/postgresql/15/bin
        fi
    fi
    for b in initdb pg_ctl postgres psql "$@"; do
        [[ -x "${PG_BINDIR}/${b}" ]] ||
            skip_or_fail "PostgreSQL 15 server binaries not found (${PG_BINDIR}/${b} missing)"
    done
    PG_BINDIR=$(abs_dir "${PG_BINDIR}") || skip_or_fail "cannot enter ${PG_BINDIR}"
    is_pg15_bindir "${PG_BINDIR}" ||
        skip_or_fail "${PG_BINDIR}/postgres is not PostgreSQL 15 ($("${PG_BINDIR}/postgres" --version 2>&1 || true))"
}

# ---------------------------------------------------------------------------
# Private temporary directory
# ---------------------------------------------------------------------------

# pgl_make_tmp PREFIX: create PGL_TMP, a directory the server user owns, short
# enough for a Unix socket path (~107 bytes) inside it.
pgl_make_tmp() {
    local prefix=$1 base
    for base in "${TMPDIR:-/tmp}" /tmp; do
        PGL_TMP=$(mktemp -d "${base%/}/${prefix}.XXXXXX" 2>/dev/null) || { PGL_TMP=""; continue; }
        if (( ${#PGL_TMP} + 5 + 12 > 100 )); then
            rm -rf -- "${PGL_TMP}"; PGL_TMP=""; continue
        fi
        if (( PGL_IS_ROOT )); then
            # mktemp dirs are 0700 root: hand this one to the server user.
            chown "${PGL_UID}:${PGL_GID}" "${PGL_TMP}"
            chmod 0700 "${PGL_TMP}"
            if ! as_pg test -w "${PGL_TMP}" -a -x "${PGL_TMP}"; then
                rm -rf -- "${PGL_TMP}"; PGL_TMP=""; continue
            fi
        fi
        return 0
    done
    die "could not create a temporary directory the server user can use"
}

# ---------------------------------------------------------------------------
# Cluster helpers
# ---------------------------------------------------------------------------

show_file() {   # show_file FILE TITLE [LINES]
    [[ -s "$1" ]] || return 0
    warn "---- $2 (last ${3:-40} lines) ----"
    tail -n "${3:-40}" -- "$1" >&2 || true
    warn "---- end of $2 ----"
}

# pgl_initdb DATA [INITDB-OPTION...]: a new cluster, superuser postgres,
# trust authentication, UTF8, C locale.
pgl_initdb() {
    local data=$1
    shift
    if ! as_pg "${PG_BINDIR}/initdb" -D "${data}" -A trust -U postgres --no-sync \
            -E UTF8 --locale=C --no-instructions "$@" >"${PGL_TMP}/initdb.log" 2>&1; then
        show_file "${PGL_TMP}/initdb.log" "initdb output"
        die "initdb failed"
    fi
}

# pgl_write_conf DATA SOCKDIR PORT [LINE...]: Unix socket in SOCKDIR only,
# no fsync, no autovacuum, small; each LINE is appended as is.
pgl_write_conf() {
    local data=$1 sockdir=$2 port=$3 line
    shift 3
    {
        printf '\n# %s.sh settings\n' "${PROG}"
        printf "listen_addresses = ''\n"
        printf "unix_socket_directories = '%s'\n" "${sockdir//\'/\'\'}"
        printf 'port = %s\n' "${port}"
        printf 'fsync = off\n'
        printf 'full_page_writes = off\n'
        printf 'wal_level = minimal\n'
        printf 'max_wal_senders = 0\n'
        printf 'autovacuum = off\n'
        printf 'shared_buffers = 16MB\n'
        printf 'max_connections = 10\n'
        printf 'logging_collector = off\n'
        for line in "$@"; do
            printf '%s\n' "${line}"
        done
    } >>"${data}/postgresql.conf"
}

# pgl_start DATA LOG: start the cluster (and remember to stop it on exit).
pgl_start() {
    local data=$1 logfile=$2 d
    for d in "${PGL_CLUSTERS[@]}" ""; do
        [[ "${d}" == "${data}" ]] && break
    done
    [[ "${d}" == "${data}" ]] || PGL_CLUSTERS+=("${data}")
    if ! as_pg "${PG_BINDIR}/pg_ctl" -D "${data}" -l "${logfile}" -w -t 120 start \
            >"${PGL_TMP}/pg_ctl.out" 2>&1; then
        show_file "${PGL_TMP}/pg_ctl.out" "pg_ctl start output"
        show_file "${logfile}" "server log"
        die "PostgreSQL server failed to start"
    fi
}

# pgl_stop_fast DATA LOG: a clean shutdown (shutdown checkpoint).
pgl_stop_fast() {
    local data=$1 logfile=$2
    if ! as_pg "${PG_BINDIR}/pg_ctl" -D "${data}" -m fast -w -t 120 stop \
            >"${PGL_TMP}/pg_ctl.out" 2>&1; then
        show_file "${PGL_TMP}/pg_ctl.out" "pg_ctl stop output"
        show_file "${logfile}" "server log"
        die "PostgreSQL server failed to stop"
    fi
}

# pgl_connect SOCKDIR PORT [LOG]: where sql and sql_script connect from
# now on; LOG is the server log sql_or_die shows when it fails.
pgl_connect() {
    PGL_SOCKDIR=$1
    PGL_PORT=$2
    PGL_LOG=${3:-}
}

# sql QUERY: run QUERY (one psql -c) on the pgl_connect cluster, database
# postgres; result (unaligned, '|'-separated) in SQL_OUT.  Returns 1 (after
# printing psql's message) if the query fails.
sql() {
    SQL_OUT=""
    if ! SQL_OUT=$(as_pg "${PG_BINDIR}/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
            -h "${PGL_SOCKDIR}" -p "${PGL_PORT}" -U postgres -d postgres -F '|' \
            -c "$1" 2>"${PGL_TMP}/psql.err"); then
        warn "query failed: $1"
        sed 's/^/    /' "${PGL_TMP}/psql.err" >&2 || true
        return 1
    fi
    return 0
}

# sql_or_die QUERY
sql_or_die() {
    if ! sql "$1"; then
        [[ -z "${PGL_LOG}" ]] || show_file "${PGL_LOG}" "server log"
        die "query failed: $1"
    fi
}

# sql_script: run the SQL script on stdin, one statement after the other
# (so BEGIN ... COMMIT, VACUUM, PREPARE TRANSACTION all work), stopping at
# the first error; output in SQL_OUT.  Returns 1 if a statement failed.
sql_script() {
    SQL_OUT=""
    # shellcheck disable=SC2034  # read by the sourcing scripts
    if ! SQL_OUT=$(as_pg "${PG_BINDIR}/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
            -h "${PGL_SOCKDIR}" -p "${PGL_PORT}" -U postgres -d postgres -F '|' \
            -f - 2>"${PGL_TMP}/psql.err"); then
        warn "SQL script failed:"
        sed 's/^/    /' "${PGL_TMP}/psql.err" >&2 || true
        return 1
    fi
    return 0
}
