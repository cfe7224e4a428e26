"""Settings, read from the environment (django-environ).

With no configuration the marketplace runs on SQLite with Celery in eager mode.
``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL`` (Celery broker, result backend
and cache) switch to real services with real workers.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

import environ
from csp.constants import NONE, SELF

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"  # runtime files (SQLite database, generated secret); not committed

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# --- Core -------------------------------------------------------------------
DEBUG = env.bool("DJANGO_DEBUG", default=True)


def _secret_key() -> str:
    """The key from the environment, or (development only) one generated once per checkout."""
    key = env.str("DJANGO_SECRET_KEY", default="")
    if key:
        return key
    if not DEBUG:
        raise environ.ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()

# --- Production security (DJANGO_DEBUG off: `manage.py check --deploy` is clean) ---------
# HTTPS only, behind a proxy that sets X-Forwarded-Proto. Each switch can be turned
# off by its variable (the loopback load test serves plain HTTP).
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=30 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
SESSION_COOKIE_HTTPONLY = True
# The app's own scripts and styles only (django-csp): no inline script, style element or
# attribute, no other origin; plotly.js is served from static/ and sets styles through the
# CSSOM, which the policy allows. The API docs pages (third-party Swagger UI and ReDoc) add
# their inline styles on their own views (marketplace.api.urls).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF], "script-src": [SELF], "style-src": [SELF], "img-src": [SELF, "data:"], "font-src": [SELF],
        "connect-src": [SELF], "object-src": [NONE], "base-uri": [SELF], "form-action": [SELF], "frame-ancestors": [NONE],
    },
}
X_FRAME_OPTIONS = "DENY"
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
ROOT_URLCONF = "marketplace.urls"
WSGI_APPLICATION = "marketplace.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "marketplace",
]

# The market's parts, in order (marketplace.market.hooks.MarketPart): the core calls their hooks in
# this order, and for a hook with one answer (the market's price curve) the first part that gives one
# wins. A new mechanism is a package with a MarketPart and a line here; no edit of the core.
MARKET_PARTS = [
    "marketplace.reservations.hooks.ReservationsPart",  # ERA (001): its price curve is the market's
    "marketplace.deadlines.hooks.DeadlinesPart",  # deadline bookings (003)
    "marketplace.pools.hooks.PoolsPart",  # Cura VM pools (004)
    "marketplace.lab.hooks.LabPart",  # the lab's requeue and upload upkeep
    "marketplace.apps.LedgerPart",  # the ledger's idempotency purge (built in the glue: the ledger imports no core)
    "marketplace.dashboard.hooks.DashboardPart",  # the dashboard's figures, computed after each tick while watched
]

# Who runs the tasks the market starts: "simulated" (the embedded cluster model, the default: make run,
# the lab, every offline run) or "slurm" (a real Slurm cluster; make slurm-up starts one on this machine).
# With slurm, departures, charges and the realised rate follow Slurm's job states (marketplace/slurm/).
CLUSTER_BACKEND = env.str("CLUSTER_BACKEND", default="simulated")
if CLUSTER_BACKEND not in ("simulated", "slurm"):
    raise environ.ImproperlyConfigured(f"CLUSTER_BACKEND must be 'simulated' or 'slurm', not {CLUSTER_BACKEND!r}")
SLURM_CLIENT = env.str("SLURM_CLIENT", default="marketplace.slurm.client.CliSlurmClient")
# The engine's executor (simulator.cluster): the model ends tasks itself, or a real cluster reports their ends.
CLUSTER_EXECUTOR = "external" if CLUSTER_BACKEND == "slurm" else "simulated"
if CLUSTER_BACKEND == "slurm":
    MARKET_PARTS.append("marketplace.slurm.hooks.SlurmPart")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "marketplace.web.middleware.RequestGuardMiddleware",  # NUL in query strings, oversize bodies: 4xx JSON
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "marketplace.web.middleware.FormWriteLimitMiddleware",  # forms share the API's write limit (429 page)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "marketplace.web.middleware.CSPMiddleware",  # Content-Security-Policy (below; django-csp's, built once)
    "marketplace.web.middleware.InertBidiMiddleware",  # right-to-left overrides in user text shown inert
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # the site-wide templates (base, nav, errors, login), then each part's own (marketplace/<part>/templates/<part>/)
        "DIRS": [BASE_DIR / "templates", *sorted((BASE_DIR / "marketplace").glob("*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "marketplace.web.context_processors.roles",  # the navigation shows what the role can use
            ],
        },
    },
]

# --- Input limits and error pages -------------------------------------------
# A bid is a few hundred bytes: 256 KiB leaves room for any real request and
# refuses floods early (413 JSON, marketplace.web.middleware). The debug page hides
# service URLs too (they carry credentials; marketplace.web.debug).
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=256 * 1024)
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
DEFAULT_EXCEPTION_REPORTER_FILTER = "marketplace.web.debug.SensitiveSettingsFilter"

# --- Database ---------------------------------------------------------------
# SQLite by default: WAL lets readers (pages) run beside the writer (the market
# clock), and IMMEDIATE transactions take the write lock up front, so two
# writers queue instead of failing with "database is locked" mid-transaction.
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(exist_ok=True)
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # The test database is a file as well: Django's default for SQLite, a shared-cache in-memory
    # database, fails at once with "database table is locked" when a test's background thread (the
    # lab's run, the live server) writes while another connection reads, where WAL and the timeout
    # above make them wait. pytest-xdist gives each worker its own file (``_gw0``, ``_gw1``). In
    # memory (tmpfs) where the machine has one, named after the checkout: a file on disk makes the
    # suite's many small commits and flushes wait on the disk.
    _TEST_DIR = Path("/dev/shm") if Path("/dev/shm").is_dir() else VAR_DIR
    DATABASES["default"]["TEST"] = {
        "NAME": str(_TEST_DIR / f"marketplace-test-{hashlib.sha256(str(BASE_DIR).encode()).hexdigest()[:12]}.sqlite3")
    }
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend; its health check needs no SELECT 1 on a quiet connection (marketplace.infra.postgresql.base)
        DATABASES["default"]["ENGINE"] = "marketplace.infra.postgresql"

# --- Cache (Redis when present) ---------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
# Short timeouts: the cache is an optimisation, and marketplace.infra.resilience treats
# its failures as misses, so a Redis outage slows no page for long.
CACHES = {
    "default": (
        {"BACKEND": "marketplace.infra.cache.SharedClientRedisCache", "LOCATION": REDIS_URL,
         "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}
        if REDIS_URL
        # in-process: throttle counters, figures, the history's settled sums (infra.windows) -- more than
        # locmem's default 300 entries, past which it drops a third of them at random
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 20000}}
    )
}

# --- Celery -----------------------------------------------------------------
# Without REDIS_URL tasks run eagerly in-process (still after commit, via
# delay_on_commit). With it: JSON only, late acknowledgement and prefetch 1 so a
# crashed worker's task is redelivered, and time limits below the broker's
# visibility timeout so a hung task is killed before Redis redelivers it.
CELERY_BROKER_URL = REDIS_URL or "memory://localhost/"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 60
CELERY_TASK_TIME_LIMIT = 90
# Short socket timeouts and one quick publish retry: with Redis down, a request
# pays at most about a second once (marketplace.infra.resilience then stops trying for
# RESILIENCE_RETRY_S) and the sweeper does the clearing instead.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 600, "socket_connect_timeout": 1, "socket_timeout": 5}
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
# Workers reconnect for as long as the broker is away (the default gives up after
# 100 attempts). The Redis transport is kombu's with one race closed (marketplace.infra.broker):
# a connection lost while a late-acked task was in flight raised "AttributeError: 'NoneType'
# object has no attribute 'hostname'" in the consumer's cleanup and stopped the worker (1 outage
# in 6 under load), whatever the --without-gossip/mingle/heartbeat flags.
CELERY_BROKER_TRANSPORT = "marketplace.infra.broker:Transport" if REDIS_URL else None
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
RESILIENCE_RETRY_S = env.float("RESILIENCE_RETRY_S", default=5.0)  # a failed broker/cache is not retried for this long
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    # The live cluster clock when run by beat (docker compose); `replay_trace`
    # drives the same service itself when no beat runs.
    "cluster-tick": {"task": "marketplace.tasks.cluster_tick_task", "schedule": 1.0, "args": ()},
    "experiment-reap": {"task": "marketplace.tasks.experiment_reap_task", "schedule": 60.0, "args": ()},
    # Clears markets whose trigger was lost or whose clearing worker died (market.services.sweeper).
    "sweep-markets": {"task": "marketplace.tasks.sweep_markets_task", "schedule": env.float("MARKET_SWEEP_S", default=1.5), "args": ()},
}

# --- Auth, API --------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Tokens expire (and are rotated when obtained again after expiry; marketplace.api.auth).
API_TOKEN_TTL_S = env.int("API_TOKEN_TTL_S", default=24 * 3600)
# A valid token is remembered per process this long (one lookup per few seconds, not per
# request); a revoked token may keep working in other processes for at most this long.
API_TOKEN_CACHE_S = env.float("API_TOKEN_CACHE_S", default=5.0)
# Wrong credentials per window before a 429 (marketplace.web.throttling.FailureLimiter):
# scope -> (failures, window in seconds). "login": per username, "login_ip": per address
# (higher: people behind one address), both for the login page and the token endpoint;
# "token": wrong API tokens per address.
FAILURE_LIMITS = {"login": (10, 300), "login_ip": (50, 300), "token": (20, 300)}
# Price previews (seconds of CPU each in a busy market) run one per user at a time and at most
# PREVIEW_CONCURRENCY at once on the site (marketplace.auction.admission): over it, 429 / 503 with
# Retry-After. A crashed process's slots expire after PREVIEW_SLOT_TTL_S.
PREVIEW_CONCURRENCY = env.int("PREVIEW_CONCURRENCY", default=2)
PREVIEW_SLOT_TTL_S = env.int("PREVIEW_SLOT_TTL_S", default=300)

REST_FRAMEWORK = {
    # The token class first: its scheme is the WWW-Authenticate challenge, so missing or bad
    # credentials are a 401 (with the session class first DRF answers 403). Pages' scripts
    # that call the API with the session cookie get the same 401 when the session ends.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "marketplace.api.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # 429 with Retry-After over these rates (marketplace.web.throttling; fail open if the cache is down).
    "DEFAULT_THROTTLE_CLASSES": [
        "marketplace.web.throttling.UserRateThrottle",
        "marketplace.web.throttling.AnonRateThrottle",
        "marketplace.web.throttling.WriteRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env.str("THROTTLE_USER", default="1200/min"),
        "anon": env.str("THROTTLE_ANON", default="60/min"),
        "writes": env.str("THROTTLE_WRITES", default="120/min"),
    },
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # page / page_size (1-500), ordering over each view's ordering_fields (unknown: 400)
    # and filters (unknown values: 400): marketplace.api.conventions.
    "DEFAULT_PAGINATION_CLASS": "marketplace.api.conventions.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "marketplace.api.conventions.StrictOrderingFilter",
    ],
    # Statuses, headers and security per operation (conditional GETs, idempotent POSTs): marketplace.api.operations.
    "DEFAULT_SCHEMA_CLASS": "marketplace.api.operations.OperationSchema",
    "DEFAULT_PARSER_CLASSES": [
        # JSON only (a form or multipart body is a 415): one request schema and one content type per
        # operation, which generated clients need; nesting limit: 400, never RecursionError.
        "marketplace.api.parsers.SafeJSONParser",
    ],
    "COERCE_DECIMAL_TO_STRING": True,
    # orjson writes the answers (DRF's bytes, in C: marketplace.api.renderers); the browsable API stays.
    "DEFAULT_RENDERER_CLASSES": [
        "marketplace.api.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # DRF's negotiation, with a shortcut for the plain JSON requests nearly every client sends.
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "marketplace.api.renderers.ContentNegotiation",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",  # the API reads JSON bodies only
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Cluster marketplace API",
    "DESCRIPTION": "Bids (Abacus budget auction), market state, allocations, fairness (H-LTRF) and prices.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get their own components (FooRequest): read-only fields are not asked for.
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and ReDoc from drf-spectacular-sidecar: the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Error answers, resource-type enums, a bid example and create->read/cancel links (marketplace.api.schema).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "marketplace.api.schema.complete_schema"],
    # One name per "status" choice set (jobs, quotes and Cura jobs each have their own).
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "marketplace.market.models.jobs.Job.Status",
        "QuoteStatusEnum": "marketplace.reservations.models.ReservationQuote.Status",
        "CuraJobStatusEnum": "marketplace.pools.models.CuraJob.Status",
    },
}

# --- Static files -----------------------------------------------------------
# plotly.js is served locally (no CDN, the pages work offline): static/vendor/plotly/
# holds plotly.js's minified "basic" partial bundle (scatter, bar, pie: 1.2 MB), at the
# version the pinned plotly package bundles (README there), which every page loads; the
# full 4.8 MB bundle comes from the plotly package itself (PlotlyBundleFinder) and only a
# lab run whose figures need another trace type (box, histogram) loads it
# (marketplace.web.plotly_bundle).
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on a missing root before collectstatic
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "marketplace.web.plotly_bundle.PlotlyBundleFinder",
]
WHITENOISE_USE_FINDERS = True

# --- I18N -------------------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Market -----------------------------------------------------------------
# The currency shown with every amount (marketplace.ledger.money: money kept and shown to 4 places).
MARKET_CURRENCY = os.environ.get("MARKET_CURRENCY", "credits")
MARKET_SAMPLE_INTERVAL_S = env.float("MARKET_SAMPLE_INTERVAL_S", default=60.0)  # simulated seconds between fairness samples
# One economy (docs/economy.md): the price level before the spot market has sold anything (money per
# slot-second: sizes the demo's deposits and the replay's budgets), and how far back (simulated seconds)
# the realised rate that anchors reservation and deadline prices looks.
MARKET_REFERENCE_RATE = env.float("MARKET_REFERENCE_RATE", default=1.0)
MARKET_RATE_WINDOW_S = env.float("MARKET_RATE_WINDOW_S", default=86400.0)
# Experiment runs (simulator.experiments): in a background thread of the web
# process when Celery is eager (no broker), else as Celery tasks; a running run
# whose heartbeat is older than EXPERIMENT_STALE_S is marked failed.
EXPERIMENTS_IN_THREAD = env.bool("EXPERIMENTS_IN_THREAD", default=not REDIS_URL)
EXPERIMENT_STALE_S = 300.0
IDEMPOTENCY_KEY_TTL_S = env.int("IDEMPOTENCY_KEY_TTL_S", default=24 * 3600)  # how long an Idempotency-Key is remembered
# A clearing renews its lease before each attempt; a dead worker's lease expires after
# MARKET_LEASE_S and the sweeper (every MARKET_SWEEP_S) takes it over. Together they
# bound how long a committed change waits for its clearing (market.services.sweeper).
MARKET_LEASE_S = env.float("MARKET_LEASE_S", default=4.0)
MARKET_SWEEP_S = env.float("MARKET_SWEEP_S", default=1.5)
MARKET_STALENESS_BOUND_S = 10.0
MARKET_CLEARING_DELAY_S = env.float("MARKET_CLEARING_DELAY_S", default=0.0)  # fault injection for the crash tests only
# A worker starts a market's next clearing at least this long after its last one ended
# (market.services.market.clearing_pace): the changes of the wait join one clearing instead of
# each starting its own solve. 0 turns it off; eager Celery (no broker) never waits.
MARKET_CLEARING_MIN_INTERVAL_S = env.float("MARKET_CLEARING_MIN_INTERVAL_S", default=0.1)
# Simulation lab (lab.services.simulations): one task per configuration on its own
# queue, acked early (never redelivered, so no relation to the broker's
# visibility_timeout), killed after SIMULATION_TIME_LIMIT_S; a run refused
# before it starts when its estimate exceeds SIMULATION_MEMORY_LIMIT_MB (None:
# half the machine's available memory).
SIMULATION_TIME_LIMIT_S = env.int("SIMULATION_TIME_LIMIT_S", default=4 * 3600)
SIMULATION_MEMORY_LIMIT_MB = env.int("SIMULATION_MEMORY_LIMIT_MB", default=0) or None
SIMULATION_UPLOAD_DIR = BASE_DIR / "var" / "simulation-uploads"
# Uploaded traces (lab.services.uploads): the request only stores the file, at most
# SIMULATION_UPLOAD_MAX_MB as sent (the form states it; a larger body is refused before it is
# read, on the form's page) and SIMULATION_UPLOAD_MAX_DECOMPRESSED_MB once a .gz is inflated;
# a worker reads it, at most SIMULATION_UPLOAD_MAX_LINES lines in SIMULATION_UPLOAD_CHECK_S.
SIMULATION_UPLOAD_MAX_BYTES = int(env.float("SIMULATION_UPLOAD_MAX_MB", default=16) * 2**20)
SIMULATION_UPLOAD_MAX_DECOMPRESSED_BYTES = int(env.float("SIMULATION_UPLOAD_MAX_DECOMPRESSED_MB", default=64) * 2**20)
SIMULATION_UPLOAD_MAX_LINES = env.int("SIMULATION_UPLOAD_MAX_LINES", default=200_000)
SIMULATION_UPLOAD_CHECK_S = env.int("SIMULATION_UPLOAD_CHECK_S", default=60)
# Per-tenant lab quotas and fair queueing (lab.services.quotas; staff are exempt from the quotas):
# the uploaded traces a tenant's unfinished studies keep (an upload is deleted when its study ends)
# and its runs queued or running; a start over either is refused on the form's field. At most
# LAB_DISPATCH_PER_TENANT of an owner's study runs are with the workers (published or running) at
# once; the others wait in the database and are published as the owner's runs end, so another
# tenant's study waits behind at most that many of each owner's runs, not behind all of them.
LAB_QUOTA_UPLOAD_BYTES = int(env.float("LAB_QUOTA_UPLOAD_MB", default=64) * 2**20)
LAB_QUOTA_RUNS = env.int("LAB_QUOTA_RUNS", default=128)
LAB_DISPATCH_PER_TENANT = env.int("LAB_DISPATCH_PER_TENANT", default=4)
# Retries (lab.services.experiments): a lab run is tried at most SIMULATION_MAX_ATTEMPTS
# times (a raised attempt or a lost worker), waiting EXPERIMENT_RETRY_BACKOFF_S
# doubled per attempt (at most EXPERIMENT_RETRY_MAX_BACKOFF_S) before the next.
SIMULATION_MAX_ATTEMPTS = env.int("SIMULATION_MAX_ATTEMPTS", default=3)
EXPERIMENT_RETRY_BACKOFF_S = env.float("EXPERIMENT_RETRY_BACKOFF_S", default=30.0)
EXPERIMENT_RETRY_MAX_BACKOFF_S = env.float("EXPERIMENT_RETRY_MAX_BACKOFF_S", default=600.0)
CELERY_TASK_ROUTES = {"marketplace.tasks.simulation_run_task": {"queue": "simulation"},
                      "marketplace.tasks.experiment_part_task": {"queue": "simulation"},
                      "marketplace.tasks.simulation_check_task": {"queue": "simulation"}}

# Expected refusals (403 PermissionDenied, DRF 401/403, 404) are one line each, without a
# traceback (marketplace.web.logs); errors keep theirs.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"expected_refusals": {"()": "marketplace.web.logs.ExpectedRefusals"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["expected_refusals"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
    "loggers": {"marketplace": {"level": env.str("MARKET_LOG_LEVEL", default="INFO")}},
}
