#!/bin/sh
# The visitor protocol with curl: arrive, solve, join, poll, leave (against `make serve` unless
# ANTEROOM_URL, ANTEROOM_KEY and ANTEROOM_ROOM say otherwise).
set -eu
BASE=${ANTEROOM_URL:-http://127.0.0.1:8000}
KEY=${ANTEROOM_KEY:-pk_demo}
ROOM=${ANTEROOM_ROOM:-demo}
HERE=$(dirname "$0")
HEADERS=$(mktemp)
trap 'rm -f "$HEADERS"' EXIT

post() {  # post PATH JSON [curl options]: every visitor call is a POST of JSON
  path=$1 body=$2
  shift 2
  curl -sS -X POST "$BASE$path" -H 'Content-Type: application/json' -H 'Accept-Language: en' \
    -d "$body" "$@"
}
get() {  # get a.b: one field of the JSON on stdin
  python3 -c 'import json, sys
value = json.load(sys.stdin)
for key in sys.argv[1].split("."):
    value = value[key]
print(value)' "$1"
}

ARRIVAL=$(post /api/v1/arrive "{\"apiKey\": \"$KEY\", \"room\": \"$ROOM\"}")
echo "arrive: solve at least $(echo "$ARRIVAL" | get minPuzzles) puzzles," \
  "$(echo "$ARRIVAL" | get expectedHashes) hashes for all"
CHALLENGE=$(echo "$ARRIVAL" | get challenge)
SOLUTIONS=$(echo "$ARRIVAL" | python3 "$HERE/solve.py")
JOINED=$(post /api/v1/queue/join "{\"apiKey\": \"$KEY\", \"room\": \"$ROOM\",
  \"challenge\": \"$CHALLENGE\", \"solutions\": $SOLUTIONS}")
echo "join: $(echo "$JOINED" | get queue.status), position $(echo "$JOINED" | get queue.position)," \
  "poll again in $(echo "$JOINED" | get queue.pollAfterMs) ms"
TICKET=$(echo "$JOINED" | get queue.queueToken)
POLLED=$(post /api/v1/queue/poll "{\"apiKey\": \"$KEY\", \"ticket\": \"$TICKET\"}" -D "$HEADERS")
echo "poll: $(echo "$POLLED" | get status), position $(echo "$POLLED" | get position)," \
  "$(grep -i '^retry-after' "$HEADERS" | tr -d '\r')"
post /api/v1/queue/leave "{\"apiKey\": \"$KEY\", \"ticket\": \"$TICKET\"}" -o /dev/null \
  -w "leave: %{http_code}\n"
