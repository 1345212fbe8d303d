# shellcheck shell=bash
# Runs one spike against one server: what the checkpoints from lesson 05 on (and the demo) do
# once per profile. Source it after lessons/tools/lib.sh; do not run it.
#
#   pool_ceiling
#       Prints the pool's ceiling as pgbench measures it on $PG_CONNINFO, and keeps the figure
#       in POOL_CEILING (queries/s) for the demo's report.
#   spike_server NAME PROGRAM ARGS...
#       Starts the server (start_server, with --port 0 --management-port $MANAGEMENT_PORT added:
#       0, a free port, unless set), runs the spike against its GET $SPIKE_PATH (/work) with the probe on its
#       /metrics, prints the summary (summarize) and the server's CPU time, and stops the
#       server. Writes $SPIKE_OUT/NAME.csv, NAME-probe.csv and NAME.log. With OPEN_RATE, an open
#       loop follows on the same server, once the closed loop's last answer is in: its summary
#       (latency from the intended start and from the send), NAME-open.csv, NAME-open-probe.csv,
#       and NAME-loops.png, the two loops on one time axis (loops_figure).
#
# The spike's shape comes from the environment; the defaults are the lessons' scaled-down spike:
#   WORKERS=2000 RAMP=2 HOLD=8 TIMEOUT=30 BACKOFF=2  (seconds)
#   STEADY_FROM=5                  the steady state starts here (the summary's goodput, p50, p95)
#   SPIKE_OUT=$LOGS                where the CSVs go
#   SPIKE_PATH=/work               what every worker asks for
#   OPEN_RATE=0                    requests/s of the open loop after the closed one (0: none)
#   OPEN_HOLD=$HOLD OPEN_WORKERS=$WORKERS  its length (s), and its connections: the most
#                                  requests outstanding at once
#   OPEN_FOR=NAME                  only the run of that NAME gets one (default: every run)
WORKERS=${WORKERS:-2000}
RAMP=${RAMP:-2}
HOLD=${HOLD:-8}
TIMEOUT=${TIMEOUT:-30}
BACKOFF=${BACKOFF:-2}
STEADY_FROM=${STEADY_FROM:-5}
SPIKE_OUT=${SPIKE_OUT:-$LOGS}
SPIKE_PATH=${SPIKE_PATH:-/work}
OPEN_RATE=${OPEN_RATE:-0}
OPEN_HOLD=${OPEN_HOLD:-$HOLD}
OPEN_WORKERS=${OPEN_WORKERS:-$WORKERS}
OPEN_FOR=${OPEN_FOR:-}

# pool_ceiling: prints what ten connections running the query back to back achieve here
# (pgbench, 5 s): the ceiling every goodput compares with.
pool_ceiling() {
    local tps output
    output=$(pgbench -n -c 10 -j 2 -T 5 -f "$ROOT/lessons/04-pool/work.sql" "$PG_CONNINFO" 2>&1) ||
        die "pgbench could not measure the pool's ceiling: $(tail -n 1 <<<"$output")"
    tps=$(awk '/^tps = / { printf "%.1f", $3 }' <<<"$output")
    # shellcheck disable=SC2034 # POOL_CEILING is the caller's
    POOL_CEILING=$tps
    say "pgbench, 10 connections, 5 s: ${tps:-?} queries/s (the pool's real ceiling here)"
}

# CPU seconds (user + system) process $1 has used so far.
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$1/stat"
}

spike_server() {
    local name=$1
    shift
    mkdir -p "$SPIKE_OUT"
    LOGS=$SPIKE_OUT start_server "$name" "$@" --port 0 --management-port "${MANAGEMENT_PORT:-0}"
    local management
    management=$(grep -o -m1 'management on [0-9.]*:[0-9]*' "$SPIKE_OUT/$name.log" | sed 's/.*on //')
    [ -n "$management" ] || die "$name did not say where its management port is ($SPIKE_OUT/$name.log)"
    say "$name: $(basename "$1") on $SERVER_URL, management on $management"
    say "spike --workers $WORKERS --ramp $RAMP --hold $HOLD --timeout $TIMEOUT --backoff $BACKOFF"
    "$BUILD/bin/spike" --url "$SERVER_URL$SPIKE_PATH" --workers "$WORKERS" --ramp "$RAMP" \
        --hold "$HOLD" --timeout "$TIMEOUT" --backoff "$BACKOFF" --out "$SPIKE_OUT/$name.csv" \
        --probe-url "http://$management/metrics" --probe-out "$SPIKE_OUT/$name-probe.csv" >/dev/null
    local cpu open=
    cpu=$(cpu_seconds "$SERVER_PID")
    if [ "$OPEN_RATE" != 0 ] && [[ -z $OPEN_FOR || $OPEN_FOR == "$name" ]]; then
        open=1
        say "then an open loop: spike --rate $OPEN_RATE --workers $OPEN_WORKERS --ramp 0" \
            "--hold $OPEN_HOLD --timeout $TIMEOUT"
        "$BUILD/bin/spike" --url "$SERVER_URL$SPIKE_PATH" --rate "$OPEN_RATE" \
            --workers "$OPEN_WORKERS" --ramp 0 --hold "$OPEN_HOLD" --timeout "$TIMEOUT" \
            --out "$SPIKE_OUT/$name-open.csv" --probe-url "http://$management/metrics" \
            --probe-out "$SPIKE_OUT/$name-open-probe.csv" >/dev/null
    fi
    stop_servers
    "$ROOT/lessons/instruments/spike/summarize" --label "$name" --from "$STEADY_FROM" \
        --to "$(awk -v r="$RAMP" -v h="$HOLD" 'BEGIN { print r + h }')" \
        "$SPIKE_OUT/$name.csv" "$SPIKE_OUT/$name-probe.csv"
    echo "  server CPU: $cpu s"
    [ -n "$open" ] || return 0
    "$ROOT/lessons/instruments/spike/summarize" --label "$name, open loop at $OPEN_RATE/s" \
        --from 0 --to "$OPEN_HOLD" "$SPIKE_OUT/$name-open.csv" "$SPIKE_OUT/$name-open-probe.csv"
    local title="$name: a closed loop of $WORKERS workers, then $OPEN_RATE/s on schedule"
    /usr/bin/python3 "$ROOT/lessons/instruments/spike/loops_figure" \
        --title "$title on at most $OPEN_WORKERS connections" \
        --steady "$STEADY_FROM" "$(awk -v r="$RAMP" -v h="$HOLD" 'BEGIN { print r + h }')" \
        "$SPIKE_OUT/$name.csv" "$SPIKE_OUT/$name-open.csv" "$SPIKE_OUT/$name-loops.png"
    echo "  figure: $SPIKE_OUT/$name-loops.png"
}
