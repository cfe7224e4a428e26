# Two commands for a fresh machine: `make run` and `make test` (see README.md).
# Both create .venv and install the pinned requirements themselves.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
MANAGE := $(BIN)/python manage.py
STAMP := $(VENV)/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)
TRACE := data/traces/FB-2009_samples_24_times_1hr_0.tsv
HOURS ?= 3
SPEEDUP ?= 30
PORT ?= 8000
BACKEND ?= simulated

.PHONY: setup run reset test test-fast bench load clean slurm-up slurm-down

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $@

setup: $(STAMP)

# BACKEND=slurm runs the market's tasks on a one-machine Slurm (make slurm-up, as root) instead of the
# embedded cluster model. Migrate, create the demo market (admin + tenants in a two-level hierarchy),
# serve on 127.0.0.1:$(PORT) and replay the first $(HOURS) h of the FB-2009
# trace live at $(SPEEDUP) simulated seconds per wall second, once: a market that holds the replay
# already (a second `make run`) is not replayed onto again (`make reset` starts over); then `run_clock`
# keeps simulated time moving for as long as the server runs. Ctrl-C stops the processes the recipe
# started (their ids are kept in pids: `kill 0` would signal make too, which then reports an error). With REDIS_URL
# set, a Celery worker clears the market; otherwise Celery runs eagerly.
run: setup
	$(MANAGE) migrate --noinput
	$(MANAGE) seed_demo
	@if [ "$(BACKEND)" = slurm ]; then $(MAKE) --no-print-directory slurm-up; fi
	@echo ""
	@echo "  Marketplace: http://127.0.0.1:$(PORT)/   (credentials above; also in var/demo-credentials.txt)"
	@echo "  API docs:    http://127.0.0.1:$(PORT)/api/docs/     Ctrl-C stops everything."
	@echo "  Request log: var/web.log (tail -f it); this terminal shows the replay's progress bar."
	@echo ""
	@mkdir -p var
	@export CLUSTER_BACKEND=$(BACKEND); pids=""; trap 'trap - EXIT INT TERM; [ -z "$$pids" ] || kill $$pids 2>/dev/null; exit 0' EXIT INT TERM; \
	$(MANAGE) runserver 127.0.0.1:$(PORT) --noreload >>var/web.log 2>&1 & pids="$$pids $$!"; \
	if [ -n "$$REDIS_URL" ]; then $(BIN)/celery -A marketplace worker --loglevel=warning --concurrency=1 --without-gossip --without-mingle --without-heartbeat & pids="$$pids $$!"; $(MANAGE) run_clock --no-tick & pids="$$pids $$!"; fi; \
	$(MANAGE) replay_trace $(TRACE) --hours $(HOURS) --speedup $(SPEEDUP) --once; \
	echo "The market clock keeps running (Ctrl-C to stop)."; \
	$(MANAGE) run_clock & pids="$$pids $$!"; wait

# Start the demo over: empty the database (every market, job, ledger entry and login; the demo's
# passwords in var/demo-credentials.txt are kept), so the next `make run` seeds and replays afresh.
reset: setup
	$(MANAGE) flush --noinput
	@echo "The database is empty: \`make run\` seeds the demo market and replays the trace again."

# Two runs: everything but the integration tests on two workers (pytest-xdist: each worker has its
# own test database), then the integration tests alone (they start a real Celery worker and Redis).
test: setup
	$(BIN)/python -m pytest -n 2 -m "not integration"
	$(BIN)/python -m pytest -m integration

test-fast: setup
	$(BIN)/python -m pytest -m "not integration and not browser"

# Every benchmark (bench/suite.py), then one table: figure, goal, measured, ratio (>= 1: met), the machine's speed and
# the ratio against the goal scaled to it, load.
# A benchmark that measured a no-op fails (exit status 3) and gets a row saying so. The PostgreSQL
# benchmarks drop and re-create BENCH_PG_URL's database (default .../bench_clearing); the lab sweeps
# (sim-sweep, lab-sweep) need DATABASE_URL (PostgreSQL) and REDIS_URL and are skipped without them.
bench: setup
	$(BIN)/python bench/suite.py $(BENCH_ARGS)

# A bounded loopback load test (bench/load.sh: gunicorn, worker, clock, two 60 s runs of
# bench/load.py). Use PostgreSQL and Redis for figures that mean something:
#   DATABASE_URL=postgres://... REDIS_URL=redis://... make load
load: setup
	bash bench/load.sh

# A one-machine Slurm cluster (as root): Debian's slurm-wlm and munge, installed if missing, and
# slurm.conf with one partition per market resource type (manage.py slurm_config); waits until the
# node is up. Idempotent. `make slurm-down` stops the daemons.
slurm-up:
	bash docker/slurm/slurm-up.sh

slurm-down:
	bash docker/slurm/slurm-down.sh

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
