#!/usr/bin/env bash
# regress.sh -- seqscan's deterministic output, in the pg_regress manner:
# scan a set of generated tables under every page access setting (and I/O
# method: sync, worker, io_uring at several depths, simulated latency) and qual,
# keep the figures that do not depend on timing, and diff them against
# tests/expected/regress.out.  Every setting must print the same rows.
#
# Environment: MKHEAP, SEQSCAN (paths to the binaries).
# Regenerate after an intended change: REGRESS_ACCEPT=1 tests/regress.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
expected="${here}/expected/regress.out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapscan-regress.XXXXXX")
trap 'rm -rf "${tmp}"' EXIT INT TERM

# name: mkheap options
tables=(
    "s1p59:--rows 5000 --seed 1 --pad 59"
    "s2p200f50:--rows 3000 --seed 2 --pad 200 --fillfactor 50"
    "s3p0seg:--rows 8000 --seed 3 --pad 0 --segment-size 64k"
)
settings=(
    "read-8k:--access read --io-combine 8k --strategy normal"
    "read-128k-ring:--access read --io-combine 128k --strategy ring"
    "read-small-pool:--access read --buffers 256k --ring 128k --io-combine 64k"
    "mmap-8k:--access mmap --mmap-chunk 8k"
    "mmap-8M:--access mmap --mmap-chunk 8M"
    "mmap-whole:--access mmap --mmap-chunk whole"
    "read-8k-w2:--access read --io-combine 8k --workers 2"
    "read-128k-w3:--access read --io-combine 128k --strategy ring --workers 3"
    "worker-128k-ring:--io-method worker --io-combine 128k --strategy ring"
    "uring-8k-d1:--io-method io_uring --io-depth 1 --io-combine 8k --strategy normal"
    "uring-128k-d2:--io-method io_uring --io-depth 2 --io-combine 128k --strategy ring"
    "uring-64k-d64:--io-method io_uring --io-depth 64 --io-combine 64k"
    "uring-small-pool:--io-method io_uring --buffers 256k --ring 128k --io-combine 64k"
    "uring-128k-w2:--io-method io_uring --io-combine 128k --workers 2"
    "sync-latency:--io-method sync --io-latency 100"
    "uring-latency:--io-method io_uring --io-latency 100"
)
quals=("k = -1" "k >= 500000" "id <= 1000" "v < 1000000000")

# A build without liburing has no io_uring: its settings ("uring-...") are
# left out of the run and of the expected output.
have_uring=1

# field KEY JSON: the first integer value of "KEY" (bash only: no forks per field)
field() {
    local re="\"$1\": (-?[0-9]+|null)"
    [[ $2 =~ $re ]] && printf '%s' "${BASH_REMATCH[1]}"
}

{
    for t in "${tables[@]}"; do
        name=${t%%:*}
        read -r -a mkopts <<<"${t#*:}"
        "${MKHEAP}" -q "${mkopts[@]}" "${tmp}/${name}"
        seg=()
        [[ " ${mkopts[*]} " == *" --segment-size "* ]] && seg=(--segment-size 64k)
        "${SEQSCAN}" --io-method io_uring --cache asis "${seg[@]}" "${tmp}/${name}" \
            >/dev/null 2>&1 || have_uring=0
        echo "== ${name} (${t#*:})"
        for q in "${quals[@]}"; do
            for s in "${settings[@]}"; do
                sname=${s%%:*}
                [[ ${have_uring} == 0 && ${sname} == uring-* ]] && continue
                read -r -a sopts <<<"${s#*:}"
                json=$("${SEQSCAN}" --json --cache asis "${sopts[@]}" "${seg[@]}" \
                    --where "${q}" "${tmp}/${name}")
                printf '%-16s %-16s pages=%s scanned=%s returned=%s sum_v=%s reads=%s calls=%s failures=%s\n' \
                    "${q}" "${sname}" "$(field pages "${json}")" \
                    "$(field rows_scanned "${json}")" "$(field rows_returned "${json}")" \
                    "$(field sum_v "${json}")" "$(field reads "${json}")" \
                    "$(field read_calls "${json}")" "$(field checksum_failures "${json}")"
            done
        done
    done
} >"${tmp}/regress.out"

if [[ "${REGRESS_ACCEPT:-0}" == 1 ]]; then
    cp "${tmp}/regress.out" "${expected}"
    echo "regress: accepted $(wc -l <"${expected}") lines into ${expected}"
    exit 0
fi
if [[ ${have_uring} == 0 ]]; then
    echo "regress: no io_uring in this build: its settings left out"
    grep -v '^.\{17\}uring-' "${expected}" >"${tmp}/expected.out"
    expected="${tmp}/expected.out"
fi
if ! diff -u "${expected}" "${tmp}/regress.out"; then
    echo "regress: output differs from ${expected}" >&2
    exit 1
fi
echo "regress: ok ($(wc -l <"${expected}") lines match)"
