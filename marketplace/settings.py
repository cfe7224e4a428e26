"""Settings, read from the environment (django-environ).

With no configuration the marketplace runs on SQLite with Celery in eager mode.
``DATABASE_URL`` (PostgreSQL) and ``REDIS_URL`` (Celery broker, result backend
and cache) switch to real services with real workers.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import environ
import plotly

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
    "marketplace",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

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
else:
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

# --- Cache (Redis when present) ---------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
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
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 600}
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    # The live cluster clock when run by beat (docker compose); `replay_trace`
    # drives the same service itself when no beat runs.
    "cluster-tick": {"task": "marketplace.tasks.cluster_tick_task", "schedule": 1.0, "args": ()},
    "experiment-reap": {"task": "marketplace.tasks.experiment_reap_task", "schedule": 60.0, "args": ()},
}

# --- Auth, API --------------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "COERCE_DECIMAL_TO_STRING": True,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Cluster marketplace API",
    "DESCRIPTION": "Bids (Abacus budget auction), market state, allocations, fairness (H-LTRF) and prices.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc from drf-spectacular-sidecar: the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Static files -----------------------------------------------------------
# plotly.js comes from the pinned plotly package (its bundled plotly.min.js),
# served locally under static/vendor/plotly/: no CDN, the pages work offline.
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on a missing root before collectstatic
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/plotly", Path(plotly.__file__).resolve().parent / "package_data"),
]
WHITENOISE_USE_FINDERS = True

# --- I18N -------------------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Market -----------------------------------------------------------------
MARKET_SAMPLE_INTERVAL_S = env.float("MARKET_SAMPLE_INTERVAL_S", default=60.0)  # simulated seconds between fairness samples
# Experiment runs (simulator.experiments): in a background thread of the web
# process when Celery is eager (no broker), else as Celery tasks; a running run
# whose heartbeat is older than EXPERIMENT_STALE_S is marked failed.
EXPERIMENTS_IN_THREAD = env.bool("EXPERIMENTS_IN_THREAD", default=not REDIS_URL)
EXPERIMENT_STALE_S = 300.0
# Simulation lab (services.simulations): one task per configuration on its own
# queue, acked early (never redelivered, so no relation to the broker's
# visibility_timeout), killed after SIMULATION_TIME_LIMIT_S; a run refused
# before it starts when its estimate exceeds SIMULATION_MEMORY_LIMIT_MB (None:
# half the machine's available memory).
SIMULATION_TIME_LIMIT_S = env.int("SIMULATION_TIME_LIMIT_S", default=4 * 3600)
SIMULATION_MEMORY_LIMIT_MB = env.int("SIMULATION_MEMORY_LIMIT_MB", default=0) or None
SIMULATION_UPLOAD_DIR = BASE_DIR / "var" / "simulation-uploads"
CELERY_TASK_ROUTES = {"marketplace.tasks.simulation_run_task": {"queue": "simulation"}}
MARKET_LEASE_S = 120  # a clearing lease outlives CELERY_TASK_TIME_LIMIT, so a killed worker's lease expires

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
    "loggers": {"marketplace": {"level": env.str("MARKET_LOG_LEVEL", default="INFO")}},
}
