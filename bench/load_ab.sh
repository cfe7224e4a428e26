#!/usr/bin/env bash
# A/B load runs: bench/load.sh's API mix from two checkouts, alternating (A B A B ...), each on a
# fresh PostgreSQL database, so that the machine's drift falls on both alike; then one line per run
# and the medians. Besides load.py's figures it records each tick's wall time (LOAD_CLOCK_LOG) and
# samples pg_stat_activity every 0.25 s for 30 s mid-run: the mean number of backends waiting on a
# lock (in this app, nearly always the market row) and holding a transaction open.
#
# Usage: bench/load_ab.sh DIR_A DIR_B [ROUNDS=3]     (each DIR a checkout with .venv; loopback only)
#   e.g. git worktree add /work/base d3ab000 && ln -s "$PWD/.venv" /work/base/.venv
#        bench/load_ab.sh /work/base "$PWD" 3
# Env: LOAD_AB_DB (default loadab), LOAD_AB_REDIS (default redis://127.0.0.1:6379/12), LOAD_AB_OUT
# (default var/load-ab), plus load.sh's own (LOAD_DURATION, LOAD_USERS, GUNICORN_*, THROTTLE_*).
set -euo pipefail
A="$(cd "$1" && pwd)"; B="$(cd "$2" && pwd)"; ROUNDS="${3:-3}"
DB="${LOAD_AB_DB:-loadab}"; REDIS="${LOAD_AB_REDIS:-redis://127.0.0.1:6379/12}"
OUT="${LOAD_AB_OUT:-$(pwd)/var/load-ab}"; mkdir -p "$OUT"
PSQL=(psql -h 127.0.0.1 -U postgres -Atq)

sample_locks() {  # $1: output file; 120 samples, 0.25 s apart, after the servers and users have started
  sleep 35
  for _ in $(seq 1 120); do
    "${PSQL[@]}" "$DB" -c "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), count(*) FILTER (WHERE xact_start IS NOT NULL)
      FROM pg_stat_activity WHERE datname = '$DB' AND pid <> pg_backend_pid()" 2>/dev/null || true
    sleep 0.25
  done > "$1"
}

for r in $(seq 1 "$ROUNDS"); do
  for side in A B; do
    dir="${!side}"; tag="$OUT/$side-$r"
    dropdb -h 127.0.0.1 -U postgres --if-exists "$DB"; createdb -h 127.0.0.1 -U postgres "$DB"
    sample_locks "$tag.locks" & sampler=$!
    (cd "$dir" && DATABASE_URL="postgres://postgres@127.0.0.1:5432/$DB" REDIS_URL="$REDIS" LOAD_RUNS=api \
      LOAD_CLOCK_LOG="$tag.clock" bash bench/load.sh > "$tag.txt" 2>&1)
    wait "$sampler"
    echo "$side round $r done: $(grep -o 'throughput: [0-9.]* requests/s' "$tag.txt")"
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import re, statistics, sys
from pathlib import Path
out, rounds = Path(sys.argv[1]), int(sys.argv[2])
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")
cols = ("req/s", "p95 ms", "errors", "bid p95", "tick p50", "tick p95", "lock waiters", "in xact")
rows = {"A": [], "B": []}
for side in rows:
    for r in range(1, rounds + 1):
        t = (out / f"{side}-{r}.txt").read_text()
        allrow = re.search(r"^all\s+(\d+)\s+(\d+)\s+\S+\s+(\S+)", t, re.M)
        bid = re.search(r"^POST /api/jobs/\s+\d+\s+\d+\s+\S+\s+(\S+)", t, re.M)
        ticks = [float(x) for x in re.findall(r"tick=([0-9.]+)ms", (out / f"{side}-{r}.clock").read_text())]
        locks = [tuple(map(int, l.split("|"))) for l in (out / f"{side}-{r}.locks").read_text().split() if "|" in l]
        rows[side].append((float(re.search(r"throughput: ([0-9.]+)", t).group(1)), float(allrow.group(3)), int(allrow.group(2)),
                           float(bid.group(1)) if bid else float("nan"), pct(ticks, 0.5), pct(ticks, 0.95),
                           statistics.fmean(w for w, _ in locks) if locks else float("nan"),
                           statistics.fmean(x for _, x in locks) if locks else float("nan")))
print(f"{'run':<8}" + "".join(f"{c:>14}" for c in cols))
for side, runs in rows.items():
    for r, row in enumerate(runs, 1):
        print(f"{side}-{r:<6}" + "".join(f"{v:>14.1f}" for v in row))
    print(f"{side} median" + "".join(f"{statistics.median(col):>14.1f}" for col in zip(*runs)))
PY
