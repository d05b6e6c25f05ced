"""The one settings module. Every knob is an environment variable; see .env.example and README."""

from __future__ import annotations

from pathlib import Path

from config.env import ConfigurationError, database_from_url, env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", default=False)
CI = env_bool("CI", default=False)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigurationError("SECRET_KEY is required when DEBUG is off (set DEBUG=1 for local development)")
    SECRET_KEY = "insecure-development-key-only-used-when-DEBUG-is-on"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "advisor",
    "pricing",
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
    # Last, so it sees view exceptions first: a dropped database connection answers 503.
    "core.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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

DATABASES = {"default": database_from_url(env_str("DATABASE_URL", "sqlite:///db.sqlite3"), base_dir=BASE_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
# Failed sign-ins per client address and per username in a window, then 429 (core/ratelimit.py).
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 10, minimum=1)
LOGIN_FAILURE_WINDOW_S = env_int("LOGIN_FAILURE_WINDOW_S", 300, minimum=1)
# API tokens a user may create per window (API and token page), then 429.
TOKEN_CREATE_MAX = env_int("TOKEN_CREATE_MAX", 20, minimum=1)
TOKEN_CREATE_WINDOW_S = env_int("TOKEN_CREATE_WINDOW_S", 3600, minimum=1)
LOGIN_REDIRECT_URL = "/plan/"
LOGOUT_REDIRECT_URL = "landing"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        # Hashed names need `collectstatic` first (make serve-prod does it); tests and runserver skip it.
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("STATIC_MANIFEST", default=not DEBUG)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Tests and `runserver` serve static files without a collectstatic step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Uploads of profiled runs and scenarios: refuse anything bigger rather than buffer it.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE
MAX_UPLOAD_ROWS = env_int("MAX_UPLOAD_ROWS", 20_000, minimum=1)

# --- Redis: Celery broker, result backend and cache. Without it tasks run in-process. ---
REDIS_URL = env_str("REDIS_URL")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
# Eager runs record their result too, so a task's status URL answers in the embedded mode as well.
CELERY_TASK_STORE_EAGER_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 15 * 60, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 12 * 60, minimum=1)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
# Entries are added by the apps that own periodic work (pricing adds one per feed).
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {}

# --- Price feeds (pricing/). A feed without credentials is reported as "not configured". ---
PRICING_AWS_ACCESS_KEY_ID = env_str("PRICING_AWS_ACCESS_KEY_ID")  # empty: boto3's own credential chain
PRICING_AWS_SECRET_ACCESS_KEY = env_str("PRICING_AWS_SECRET_ACCESS_KEY")
PRICING_AWS_REGIONS = env_list("PRICING_AWS_REGIONS", ["us-east-1", "us-west-2", "eu-west-1"])
PRICING_AZURE_ENABLED = env_bool("PRICING_AZURE_ENABLED", default=True)  # public API, no credentials
PRICING_AZURE_REGIONS = env_list("PRICING_AZURE_REGIONS", ["eastus", "westus2", "westeurope"])
PRICING_GCP_API_KEY = env_str("PRICING_GCP_API_KEY")
PRICING_LAMBDA_API_KEY = env_str("PRICING_LAMBDA_API_KEY")
PRICING_SKYPILOT_ENABLED = env_bool("PRICING_SKYPILOT_ENABLED", default=True)  # public CSVs, no credentials
# Clouds without a direct feed here; each becomes its own provider.
PRICING_SKYPILOT_CLOUDS = env_list("PRICING_SKYPILOT_CLOUDS", ["runpod", "vast", "fluidstack", "cudo", "nebius", "oci"])
# The catalog base SkyPilot reads and its S3 mirror (sky/skylet/constants.py HOSTED_CATALOG_DIR_URL[_S3_MIRROR]).
PRICING_SKYPILOT_CATALOG_URL = env_str(
    "PRICING_SKYPILOT_CATALOG_URL", "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
)
PRICING_SKYPILOT_MIRROR_URL = env_str(
    "PRICING_SKYPILOT_MIRROR_URL", "https://skypilot-catalog.s3.us-east-1.amazonaws.com/catalogs"
)
# Lambda's API moved from cloud.lambdalabs.com to cloud.lambda.ai (docs.lambda.ai/api/cloud).
PRICING_LAMBDA_API_URL = env_str("PRICING_LAMBDA_API_URL", "https://cloud.lambda.ai/api/v1/instance-types")
PRICING_HTTP_TIMEOUT_S = env_int("PRICING_HTTP_TIMEOUT_S", 30, minimum=1)
# Per-request transport retries (429, 5xx, connection errors): count, backoff base (s), Retry-After cap (s).
PRICING_HTTP_RETRIES = env_int("PRICING_HTTP_RETRIES", 3, minimum=0)
PRICING_HTTP_BACKOFF_S = env_int("PRICING_HTTP_BACKOFF_S", 2, minimum=0)
PRICING_HTTP_RETRY_AFTER_MAX_S = env_int("PRICING_HTTP_RETRY_AFTER_MAX_S", 120, minimum=0)
PRICING_MAX_PAGES = env_int("PRICING_MAX_PAGES", 500, minimum=1)
# Offers older than this (or undated) are flagged stale.
PRICING_STALE_AFTER_HOURS = env_int("PRICING_STALE_AFTER_HOURS", 48, minimum=1)
# A run that accepts fewer offers than this share of the last successful run is rejected, keeping the old offers.
PRICING_MIN_FRACTION_OF_LAST_RUN = float(env_str("PRICING_MIN_FRACTION_OF_LAST_RUN", "0.5"))
# Plausible USD per GPU-hour: the bundled snapshot spans $0.062 to $15.98 per GPU-hour; about 3x margin each way.
PRICING_MIN_USD_PER_GPU_HOUR = float(env_str("PRICING_MIN_USD_PER_GPU_HOUR", "0.02"))
PRICING_MAX_USD_PER_GPU_HOUR = float(env_str("PRICING_MAX_USD_PER_GPU_HOUR", "50"))
PRICING_LOCK_TTL_S = env_int("PRICING_LOCK_TTL_S", 30 * 60, minimum=60)
# Beat: one entry per feed, every N hours (SkyPilot refreshes its catalog every 7 h; list prices move daily).
PRICING_REFRESH_HOURS = {
    feed: env_int(f"PRICING_REFRESH_HOURS_{feed.upper()}", hours, minimum=1)
    for feed, hours in {"aws": 24, "azure": 24, "gcp": 24, "lambda": 6, "skypilot": 7}.items()
}
for _feed, _hours in PRICING_REFRESH_HOURS.items():
    CELERY_BEAT_SCHEDULE[f"refresh-prices-{_feed}"] = {
        "task": "pricing.tasks.refresh_feed",
        "schedule": _hours * 3600.0,
        "args": (_feed,),
        "options": {"expires": _hours * 3600.0 / 2},
    }

if REDIS_URL:
    # Degrades to misses while Redis is down (core/cache.py): throttles and pages keep answering.
    CACHES = {
        "default": {
            "BACKEND": "core.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- REST API ---
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Named, revocable, hashed tokens (advisor.models.ApiToken); `Authorization: Token <key>`.
        "advisor.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "advisor.api.schema.ProblemAutoSchema",
    # JSON out (tabular views add CSV); /api/docs/ is the interactive browser, not DRF's browsable API.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "advisor.api.negotiation.ContentNegotiation",
    # Strict JSON bodies only, size-capped (views that take CSV uploads add their parser); forms get 415.
    "DEFAULT_PARSER_CLASSES": ["advisor.api.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "advisor.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_VERSIONING_CLASS": "rest_framework.versioning.NamespaceVersioning",
    "DEFAULT_VERSION": "v1",
    "ALLOWED_VERSIONS": ["v1"],
    "EXCEPTION_HANDLER": "advisor.api.errors.exception_handler",
    # Counted in the cache above (Redis when REDIS_URL is set, so all workers share the counts).
    "DEFAULT_THROTTLE_CLASSES": [
        "advisor.api.throttles.AnonThrottle",
        "advisor.api.throttles.UserThrottle",
        "advisor.api.throttles.ScopedThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_THROTTLE_ANON", "60/minute"),
        "user": env_str("API_THROTTLE_USER", "2000/hour"),
        # CPU-heavy: each advice runs the estimator over every size; each PDF renders a document.
        "advice": env_str("API_THROTTLE_ADVICE", "600/hour"),
        "pdf": env_str("API_THROTTLE_PDF", "120/hour"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Advisor API",
    "DESCRIPTION": "Rent or buy GPUs: advice, prices, calibrations and proposals.",
    "VERSION": "1.0.0",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Security: strict unless DEBUG. Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER. ---
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("USE_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

# --- Serving that holds (issue 25): embedded SQLite, PostgreSQL timeouts, sessions, HEAD. ---
# SQLite: WAL lets readers run beside the one writer; writes take the lock at BEGIN (IMMEDIATE), so
# two concurrent saves queue for up to SQLITE_BUSY_TIMEOUT_S instead of failing "database is locked".
SQLITE_BUSY_TIMEOUT_S = env_int("SQLITE_BUSY_TIMEOUT_S", 20, minimum=1)
# PostgreSQL: give up connecting (and answer 503) after this; cancel any statement running longer.
DATABASE_CONNECT_TIMEOUT_S = env_int("DATABASE_CONNECT_TIMEOUT_S", 3, minimum=1)
DATABASE_STATEMENT_TIMEOUT_MS = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 30_000, minimum=100)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": SQLITE_BUSY_TIMEOUT_S,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).update(  # type: ignore[union-attr]
        {
            "connect_timeout": DATABASE_CONNECT_TIMEOUT_S,
            "options": f"-c statement_timeout={DATABASE_STATEMENT_TIMEOUT_MS}",
        }
    )
    # The ASGI server runs each request's view on its own thread, so a connection kept per thread is
    # never reused and piles up: Django's docs say to disable persistent connections under ASGI.
    DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE_S", 0, minimum=0)
# Sessions (anonymous planner state included) expire; beat clears the expired rows daily.
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE_S", 14 * 24 * 3600, minimum=300)
# The only user-sized thing kept for an anonymous visitor: the planner input across sign-in (advisor/web/pending.py).
ANONYMOUS_SESSION_MAX_BYTES = env_int("ANONYMOUS_SESSION_MAX_BYTES", 16 * 1024, minimum=1024)
CELERY_BEAT_SCHEDULE["clear-expired-sessions"] = {
    "task": "core.tasks.clear_expired_sessions",
    "schedule": 24 * 3600.0,
    "options": {"expires": 12 * 3600.0},
}
# After a Redis or broker failure, skip it for this long instead of waiting on every call (core/breaker.py).
DEPENDENCY_BREAKER_OPEN_S = env_int("DEPENDENCY_BREAKER_OPEN_S", 15, minimum=1)
# First, so every GET view also answers HEAD (core/head.py).
MIDDLEWARE = ["core.head.HeadAsGetMiddleware", *MIDDLEWARE]
# Redis as cache: after one failure every call skips it for the window above (core/breaker.py).
# Redis as broker and result store: bounded socket waits, so an enqueue or a task status read answers 503 at once.
if REDIS_URL:
    from core.breaker import cache_with_breaker

    CACHES["default"] = cache_with_breaker(CACHES["default"])
    CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_timeout": 2, "socket_connect_timeout": 2}
    CELERY_REDIS_SOCKET_TIMEOUT = 2
    CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
# Work budget of one synchronous request (core/api/budget.py): above it the API answers 413 naming the limit.
# /api/v1/estimate: candidate layouts searched (about 1.1 us each on one core: 2M is about 2 s).
ESTIMATE_MAX_LAYOUTS = env_int("ESTIMATE_MAX_LAYOUTS", 2_000_000, minimum=1)
# Extra (non-schema) CSV/JSON columns of profiled runs, echoed back in estimates.
MAX_EXTRA_COLUMNS = env_int("MAX_EXTRA_COLUMNS", 50, minimum=0)
# Fleet plans: jobs given as a workload (each one advice run, ~50 ms or more) in one synchronous plan.
FLEET_MAX_WORKLOAD_JOBS = env_int("FLEET_MAX_WORKLOAD_JOBS", 100, minimum=1)
