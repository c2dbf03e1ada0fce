#!/usr/bin/env bash
# bench-space.sh: one busy space's write benchmark (BenchmarkOneSpaceMembersAtOnce,
# the busy-space path), sustained and in bursts, RUNS runs of each on a
# fresh server, summarised by benchstat (medians, with spread). make
# bench-space runs it; docs/performance.md's tables come from it.
#
#   SPACE_EVENTS, SUSTAIN  a sustained run writes at least this many events
#                          and for at least this long (3000, 30s)
#   BURST_EVENTS           a burst writes this many, as fast as it goes (200)
#   RUNS                   runs of each (3)
#   MEMBERS                the writer counts (1|2|4|8|16|32)
#   DYNOXIDE               dynoxide's binary: each writer count of each run
#                          on a new dynoxide server; unset, on the embedded
#                          server (kumo), new with each go test process
#   BENCHSTAT, OUT         benchstat's binary (bin/benchstat); where the runs go (bin)
set -euo pipefail
cd "$(dirname "$0")/.."

SPACE_EVENTS=${SPACE_EVENTS:-3000}
SUSTAIN=${SUSTAIN:-30s}
BURST_EVENTS=${BURST_EVENTS:-200}
RUNS=${RUNS:-3}
MEMBERS=${MEMBERS:-1|2|4|8|16|32}
BENCHSTAT=${BENCHSTAT:-bin/benchstat}
OUT=${OUT:-bin}
backend=kumo
[ -n "${DYNOXIDE:-}" ] && backend=dynoxide
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
sustained="$OUT/bench-space-$backend-sustained.txt" burst="$OUT/bench-space-$backend-burst.txt"
: > "$sustained"
: > "$burst"

go test -c -o "$OUT/simulation.test" ./functions/sync-events/simulation

# run FILE EVENTS SUSTAIN: one run of the benchmark, each writer count on a
# fresh server (dynoxide slows as a server ages), appended to FILE.
run() {
  local file=$1 events=$2 sustain=$3 members pid port
  for members in ${MEMBERS//|/ }; do
    pid=""
    if [ "$backend" = dynoxide ]; then
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      "$DYNOXIDE" serve --port "$port" --log quiet & pid=$!
      for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
      export DYNAMODB_ENDPOINT="http://127.0.0.1:$port" DYNAMODB_BACKEND=dynoxide
    fi
    (cd functions/sync-events/simulation && "$OUT/simulation.test" -test.run '^$' \
      -test.bench "^BenchmarkOneSpaceMembersAtOnce\$/^path=sequenced\$/^members=$members\$" \
      -test.benchtime "${events}x" -sustain "$sustain") | tee -a "$file"
    [ -z "$pid" ] || { kill "$pid"; wait "$pid" 2>/dev/null || true; }
  done
}

for i in $(seq "$RUNS"); do
  echo "== $backend, run $i of $RUNS: sustained ($SPACE_EVENTS events, $SUSTAIN at least), then a burst ($BURST_EVENTS events)"
  run "$sustained" "$SPACE_EVENTS" "$SUSTAIN"
  run "$burst" "$BURST_EVENTS" 0s
done
"$BENCHSTAT" burst="$burst" sustained="$sustained"
