# shellcheck shell=bash
# Shared by the scripts in lessons/tools, demo/ and the lesson checkpoints. Source it; do not run it.
# It defines: ROOT, BUILD, say, die, usage_if_asked, predict_if_asked, need_build, start_server, stop_servers,
# context_switches, cpu_ticks.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# BUILD may be overridden (e.g. BUILD=/tmp/b lessons/tools/setup) to keep several builds side by side.
BUILD=${BUILD:-$ROOT/build}

say() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# usage_if_asked "$@": --help or -h prints the calling script's header comment and exits 0, before
# the script builds or starts anything (lessons/tools/check-commands reads it to check the texts).
usage_if_asked() {
    case ${1:-} in
    -h | --help)
        sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    esac
}

# predict_if_asked "$@" && shift: with --predict first, prints the questions of the README beside
# the calling script (each block that begins "> **Predict"), as plain text (without the quote's
# "> ", the bold's ** and the code's backticks), waits for Enter when a person is at the
# terminal, and succeeds so the caller drops the flag; otherwise fails and prints nothing.
predict_if_asked() {
    [ "${1:-}" = --predict ] || return 1
    local readme questions
    readme=$(dirname "$0")/README.md
    questions=$(awk '/^> \*\*Predict/ { inside = 1; print "" }
        inside && /^>/ { sub(/^> ?/, ""); gsub(/\*\*|`/, ""); print; next }
        { inside = 0 }' "$readme")
    [ -n "$questions" ] || die "$readme asks no question (a block that begins \"> **Predict\")"
    printf '%s\n' "$questions" >&2
    if [ -t 0 ] && [ -t 2 ]; then
        printf '\nWrite your answer down, then press Enter to run the checkpoint. ' >&2
        read -r
    fi
    return 0
}

# need_build [TARGET...]: install what is missing and build these programs (default: everything),
# quietly when nothing changed.
# shellcheck disable=SC2120 # the targets are optional: none means everything
need_build() { "$ROOT/lessons/tools/setup" "$@" >&2 || die "setup failed (see the messages above)"; }

# start_server NAME PROGRAM ARGS...
# Starts a lesson server in the background with its output in $LOGS/NAME.log, waits until it prints
# "listening on http://HOST:PORT", and sets SERVER_PID and SERVER_URL. If it exits first (a taken
# port, a bad flag), prints its last words and fails. Every server started this way is stopped when
# the script ends, however it ends (finished, failed, or Ctrl+C).
LOGS=${LOGS:-$BUILD/logs}
SERVER_PIDS=()
start_server() {
    local name=$1
    shift
    mkdir -p "$LOGS"
    local log=$LOGS/$name.log
    : >"$log" # now, not in the background job: the wait below must not read the last run's log
    "$@" >"$log" 2>&1 &
    SERVER_PID=$!
    SERVER_PIDS+=("$SERVER_PID")
    local waited=0
    # shellcheck disable=SC2034 # SERVER_URL is the caller's
    until SERVER_URL=$(grep -o -m1 'http://[0-9.]*:[0-9]*' "$log" 2>/dev/null); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            cat "$log" >&2
            die "$name did not start (log: $log)"
        fi
        ((waited++ < 200)) || die "$name did not say 'listening on' within 20 s (log: $log)"
        sleep 0.1
    done
}

stop_servers() {
    local pid
    for pid in "${SERVER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${SERVER_PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    SERVER_PIDS=()
}
# context_switches PID: "voluntary involuntary" context switches so far, summed over the process's
# threads (/proc/PID/task/*/status). A thread that has ended takes its own count with it.
context_switches() {
    cat /proc/"$1"/task/*/status 2>/dev/null |
        awk '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 }
             END { print v + 0, n + 0 }'
}
# cpu_ticks PID: user + system CPU time so far, in clock ticks (getconf CLK_TCK a second; the whole
# process, ended threads too).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

trap stop_servers EXIT
trap 'exit 130' INT TERM
