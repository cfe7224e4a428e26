#!/usr/bin/env bash
# `make load`: gunicorn (debug off, production settings but plain HTTP on loopback), a Celery
# worker when REDIS_URL is set, the market clock + sweeper, then bench/load.py twice:
#   1. the API mix at saturation: 50 users, think 0-0.05 s, 60 s (target: 0 errors, >= 200 req/s, p95 < 500 ms)
#   2. the issue's scenario: 50 users on pages and API, think 0.2-1 s, 60 s
# Everything it starts is stopped when it ends (or on Ctrl-C). Loopback only.
# LOAD_TICK_S: wall seconds between clock ticks (run_clock --tick; default 0.5).
# THROTTLE_WRITES, THROTTLE_USER: the per-tenant limits for this run (defaults here 1200/min and
#   6000/min; the product's are 120/min and 1200/min). At saturation each of the 50 users sends 5-20
#   requests a second (keep-alive connections are not spread evenly over gunicorn's workers), a fifth
#   of them writes: up to 1,200 requests and 80-130 bids and cancels a minute, over the product's
#   limits, whose 429s would measure the throttle, not the server. The throttles still run on every
#   request (their Redis round trips are in the figures); tests/marketplace/test_security.py and
#   bench/probe.sh check the 429s themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${LOAD_PORT:-8070}"
BIN=.venv/bin
export DJANGO_DEBUG=0 DJANGO_SECURE_SSL_REDIRECT=0 DJANGO_SECURE_COOKIES=0 DJANGO_SECURE_HSTS_SECONDS=0
export DJANGO_SECRET_KEY="${DJANGO_SECRET_KEY:-$($BIN/python -c 'import secrets; print(secrets.token_urlsafe(64))')}"
export DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost" LOG_LEVEL=ERROR MARKET_LOG_LEVEL=ERROR
export THROTTLE_WRITES="${THROTTLE_WRITES:-1200/min}" THROTTLE_USER="${THROTTLE_USER:-6000/min}"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

$BIN/python manage.py migrate --noinput -v0
$BIN/python manage.py seed_demo >/dev/null
GUNICORN_BIND="127.0.0.1:$PORT" GUNICORN_WORKERS="${GUNICORN_WORKERS:-3}" $BIN/gunicorn marketplace.wsgi -c docker/gunicorn.conf.py &
pids+=($!)
roots=(--root "web=$!")
if [ -n "${REDIS_URL:-}" ]; then
  $BIN/celery -A marketplace worker --loglevel=error --concurrency=1 --without-gossip --without-mingle --without-heartbeat &
  pids+=($!)
  roots+=(--root "worker=$!")
fi
# LOAD_CLOCK_LOG=file: the clock's line per tick (simulated time, jobs, the tick's wall time) goes there
$BIN/python manage.py run_clock ${LOAD_TICK_S:+--tick "$LOAD_TICK_S"} ${LOAD_CLOCK_LOG:+-v 2} >"${LOAD_CLOCK_LOG:-/dev/null}" &
pids+=($!)
roots+=(--root "clock=$!")
db="$($BIN/python -c 'import os, urllib.parse as u; url = os.environ.get("DATABASE_URL", ""); print(u.urlparse(url).path.lstrip("/") if url.startswith("postgres") else "")')"
[ -n "$db" ] && roots+=(--db "$db")
cpu_file="$(mktemp)"
for _ in $(seq 1 60); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/login/" && break; sleep 0.5; done

for run in ${LOAD_RUNS:-api both}; do
  case "$run" in
    api)  think=(--think-min 0 --think-max 0.05) ;;
    *)    think=(--think-min 0.2 --think-max 1.0) ;;
  esac
  $BIN/python bench/cpu_split.py snap "$cpu_file" "${roots[@]}"
  $BIN/python bench/load.py --url "http://127.0.0.1:$PORT" --users "${LOAD_USERS:-50}" --duration "${LOAD_DURATION:-60}" \
    --mix "$run" "${think[@]}" ${LOAD_CONDITIONAL:+--conditional}
  $BIN/python bench/cpu_split.py diff "$cpu_file" "${roots[@]}"
done
rm -f "$cpu_file"
