"""The one settings module. Every knob is an environment variable; see .env.example and README."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from config.env import (
    C_INT_MAX,
    LOG_LEVELS,
    ConfigurationError,
    database_from_url,
    deployment,
    env_bool,
    env_choice,
    env_float,
    env_fraction,
    env_int,
    env_list,
    env_names,
    env_networks,
    env_origins,
    env_rate,
    env_redis_url,
    env_str,
    env_url,
    env_visible,
    env_window,
    require_at_least,
    require_order,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# development (a bare checkout, or DEBUG=1) or production (see config.env.deployment and the README).
DEPLOYMENT = deployment()
PRODUCTION = DEPLOYMENT == "production"
DEBUG = env_bool("DEBUG", default=False)
if PRODUCTION and DEBUG:
    raise ConfigurationError("DEBUG=1 is not allowed with DJANGO_ENV=production; unset DEBUG or set it to 0")
CI = env_bool("CI", default=False)

SECRET_KEY = env_str("SECRET_KEY")
# Blanks are unset, as for every other reader (a templated `SECRET_KEY= ` keyed signatures by a space), and so are
# invisible format characters alone (a zero-width space was accepted in production).
if not env_visible("SECRET_KEY"):
    if PRODUCTION:
        raise ConfigurationError(
            "SECRET_KEY is required in production (DEBUG=0, DATABASE_URL or REDIS_URL set, or DJANGO_ENV=production);"
            " for local use unset those or set DJANGO_ENV=development"
        )
    SECRET_KEY = "insecure-development-key-for-a-local-checkout-only"  # noqa: S105
    # Once per process tree: runserver's reloader child inherits the marker.
    if not os.environ.get("GPU_ADVISOR_DEV_NOTICE"):
        os.environ["GPU_ADVISOR_DEV_NOTICE"] = "1"
        print(
            "GPU Advisor: development mode (no SECRET_KEY): a local development key, "
            + ("SQLite" if not os.environ.get("DATABASE_URL") else "DATABASE_URL")
            + ", tasks in-process. Set DJANGO_ENV=production and SECRET_KEY on a server.",
            file=sys.stderr,
        )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [] if PRODUCTION else ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_origins("CSRF_TRUSTED_ORIGINS", [])

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
    "core",
    "advisor",
    "pricing",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Query strings and urlencoded forms that are not UTF-8: 400 naming the parameter (Django would decode U+FFFD).
    "core.request_encoding.Utf8RequestMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.security_headers.SecurityHeadersMiddleware",
    # Last, so it sees view exceptions first: a dropped database connection answers 503.
    "core.middleware.DatabaseUnavailableMiddleware",
]

# Content-Security-Policy of every response: all from this site, no inline script or style (templates keep
# scripts in static/js and styles in static/css; Swagger UI's data: images and icons are the one exception).
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
)
# Pages showing a user's scenarios, or a scenario through a share link: never cached by browsers or proxies. A
# proposal holds its scenario's name, document and whole Advice, and a saved fleet its jobs and plan, so their reads
# (web and API, PDF and workbook too) are private in the same way.
NO_STORE_PATH_PREFIXES = (
    "/scenarios/",
    "/s/",
    "/api/v1/scenarios",
    "/proposals/",
    "/api/v1/proposals",
    "/fleet/",
    "/api/v1/fleets",
)

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

_DATABASE_URL = env_str("DATABASE_URL").strip() or "sqlite:///db.sqlite3"
DATABASES = {"default": database_from_url(_DATABASE_URL, base_dir=BASE_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
# Failed sign-ins per username from one client address, and per address over all usernames, in a window, then 429
# (core/ratelimit.py).
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 10, minimum=1)
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("LOGIN_MAX_FAILURES_PER_ADDRESS", 50, minimum=1)
# Addresses or networks of the reverse proxies in front of the app: a request from one of them is counted under the
# address it put in X-Forwarded-For. Default none (REMOTE_ADDR only; X-Forwarded-For is client-controlled).
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES", [])
LOGIN_FAILURE_WINDOW_S = env_window("LOGIN_FAILURE_WINDOW_S", 300, minimum=1)
# API tokens a user may create per window (API and token page), then 429.
TOKEN_CREATE_MAX = env_int("TOKEN_CREATE_MAX", 20, minimum=1)
TOKEN_CREATE_WINDOW_S = env_window("TOKEN_CREATE_WINDOW_S", 3600, minimum=1)
LOGIN_REDIRECT_URL = "/plan/"
LOGOUT_REDIRECT_URL = "landing"
# E-mail, for password-reset links only. Without EMAIL_HOST the server sends none, and the reset page says so and
# whom to ask (advisor/web/account_views.py) instead of claiming a message went out.
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=True)
EMAIL_TIMEOUT = env_window("EMAIL_TIMEOUT_S", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL") or "gpu-advisor@localhost"

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
        if env_bool("STATIC_MANIFEST", default=PRODUCTION)
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
# Files the management commands read (core.inputfile): at most this many bytes, never the whole of /dev/zero.
# Documents and CSVs: a year of per-minute usage samples is about 25 MB. Saved price payloads: bulk offer files.
MAX_INPUT_FILE_BYTES = env_int("MAX_INPUT_FILE_BYTES", 64 * 1024 * 1024, minimum=1024)
MAX_PRICE_FILE_BYTES = env_int("MAX_PRICE_FILE_BYTES", 256 * 1024 * 1024, minimum=1024)
# Nesting of a JSON body (a scenario is 4 deep): deeper bodies are refused before parsing, so no parser recurses.
MAX_JSON_DEPTH = env_int("MAX_JSON_DEPTH", 32, minimum=8)
# Uploads of at most this many runs are fitted inside the request (about 1 s for 6 runs, 3 s for 40 on 2 cores,
# measured with estimator.calibrate.fit); larger ones go to the fit_calibration task and answer 202.
CALIBRATION_INLINE_MAX_RUNS = env_int("CALIBRATION_INLINE_MAX_RUNS", 24, minimum=0)
# Without a task queue (the embedded mode, REDIS_URL unset) the fit task runs inside the upload's request: at most
# this many runs, about 5 s on 2 cores (an outsider measured 1,116 runs in 5.3 s, 20,000 in 64 s). Larger uploads
# need Redis and a worker.
CALIBRATION_IN_PROCESS_MAX_RUNS = env_int("CALIBRATION_IN_PROCESS_MAX_RUNS", 1000, minimum=1)
# Fits one user may have waiting or running at once (each can hold a worker for a minute at MAX_UPLOAD_ROWS).
CALIBRATION_MAX_QUEUED_FITS = env_int("CALIBRATION_MAX_QUEUED_FITS", 3, minimum=1)
# A fit still pending this long after it was queued lost its task (a Redis flush or restart): shown as stalled and
# queued again by beat. Four times the hard task limit (CELERY_TASK_TIME_LIMIT, 15 min) by default.
CALIBRATION_FIT_STALLED_AFTER_S = env_window("CALIBRATION_FIT_STALLED_AFTER_S", 3600, minimum=60)
# Who besides staff may poll a task at /api/v1/tasks/<id>: dotted paths of (user, task_id) -> bool. Pricing owns
# the endpoint and imports no app; the advisor grants owners their calibration fits.
TASK_VIEWERS = ["advisor.calibrations.owns_calibration_task"]
# Problems listed in one error response; the rest are counted (`errors_omitted`), keeping error bodies small.
MAX_ERRORS_PER_RESPONSE = env_int("MAX_ERRORS_PER_RESPONSE", 100, minimum=1)

# --- Redis: Celery broker, result backend and cache. Without it tasks run in-process. ---
REDIS_URL = env_redis_url("REDIS_URL")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
# Eager runs record their result too, so a task's status URL answers in the embedded mode as well.
CELERY_TASK_STORE_EAGER_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_TIME_LIMIT = env_window("CELERY_TASK_TIME_LIMIT", 15 * 60, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = env_window("CELERY_TASK_SOFT_TIME_LIMIT", 12 * 60, minimum=1)
# The soft limit raises inside the task so it can clean up; past the hard limit the worker is killed.
require_order(
    ("CELERY_TASK_SOFT_TIME_LIMIT", CELERY_TASK_SOFT_TIME_LIMIT), ("CELERY_TASK_TIME_LIMIT", CELERY_TASK_TIME_LIMIT)
)
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
PRICING_AWS_REGIONS = env_names("PRICING_AWS_REGIONS", ["us-east-1", "us-west-2", "eu-west-1"])
PRICING_AZURE_ENABLED = env_bool("PRICING_AZURE_ENABLED", default=True)  # public API, no credentials
PRICING_AZURE_REGIONS = env_names("PRICING_AZURE_REGIONS", ["eastus", "westus2", "westeurope"])
PRICING_GCP_API_KEY = env_str("PRICING_GCP_API_KEY")
PRICING_LAMBDA_API_KEY = env_str("PRICING_LAMBDA_API_KEY")
PRICING_SKYPILOT_ENABLED = env_bool("PRICING_SKYPILOT_ENABLED", default=True)  # public CSVs, no credentials
# Clouds without a direct feed here; each becomes its own provider.
PRICING_SKYPILOT_CLOUDS = env_names(
    "PRICING_SKYPILOT_CLOUDS", ["runpod", "vast", "fluidstack", "cudo", "nebius", "oci"]
)
# The catalog base SkyPilot reads and its S3 mirror (sky/skylet/constants.py HOSTED_CATALOG_DIR_URL[_S3_MIRROR]).
PRICING_SKYPILOT_CATALOG_URL = env_url(
    "PRICING_SKYPILOT_CATALOG_URL",
    "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs",
    schemes=("https", "http"),
)
PRICING_SKYPILOT_MIRROR_URL = env_url(
    "PRICING_SKYPILOT_MIRROR_URL",
    "https://skypilot-catalog.s3.us-east-1.amazonaws.com/catalogs",
    schemes=("https", "http"),
)
# Lambda's API moved from cloud.lambdalabs.com to cloud.lambda.ai (docs.lambda.ai/api/cloud).
PRICING_LAMBDA_API_URL = env_url(
    "PRICING_LAMBDA_API_URL", "https://cloud.lambda.ai/api/v1/instance-types", schemes=("https", "http")
)
PRICING_HTTP_TIMEOUT_S = env_window("PRICING_HTTP_TIMEOUT_S", 30, minimum=1)
# Per-request transport retries (429, 5xx, connection errors): count, backoff base (s), Retry-After cap (s).
PRICING_HTTP_RETRIES = env_int("PRICING_HTTP_RETRIES", 3, minimum=0)
PRICING_HTTP_BACKOFF_S = env_window("PRICING_HTTP_BACKOFF_S", 2, minimum=0)
PRICING_HTTP_RETRY_AFTER_MAX_S = env_window("PRICING_HTTP_RETRY_AFTER_MAX_S", 120, minimum=0)
PRICING_MAX_PAGES = env_int("PRICING_MAX_PAGES", 500, minimum=1)
# Offers older than this (or undated) are flagged stale.
PRICING_STALE_AFTER_HOURS = env_window("PRICING_STALE_AFTER_HOURS", 48, minimum=1, unit_s=3600)
# A hardware (purchase) quote older than this is flagged: NVIDIA's data-center GPUs came a generation every two years
# (A100 2020, H100 2022, B200 2024), and a server's price moves when its successor ships.
HARDWARE_QUOTE_STALE_AFTER_DAYS = env_window("HARDWARE_QUOTE_STALE_AFTER_DAYS", 730, minimum=1, unit_s=24 * 3600)
# A run that accepts fewer offers than this share of the last successful run is rejected, keeping the old offers.
PRICING_MIN_FRACTION_OF_LAST_RUN = env_fraction("PRICING_MIN_FRACTION_OF_LAST_RUN", 0.5)
# Plausible USD per GPU-hour: the bundled snapshot spans $0.062 to $15.98 per GPU-hour; about 3x margin each way.
PRICING_MIN_USD_PER_GPU_HOUR = env_float("PRICING_MIN_USD_PER_GPU_HOUR", 0.02, minimum=0.0)
PRICING_MAX_USD_PER_GPU_HOUR = env_float("PRICING_MAX_USD_PER_GPU_HOUR", 50.0, minimum=0.0)
require_order(
    ("PRICING_MIN_USD_PER_GPU_HOUR", PRICING_MIN_USD_PER_GPU_HOUR),
    ("PRICING_MAX_USD_PER_GPU_HOUR", PRICING_MAX_USD_PER_GPU_HOUR),
)
# The price refresh task's own time limits (pricing.tasks.refresh_feed): CELERY_TASK_TIME_LIMIT and
# CELERY_TASK_SOFT_TIME_LIMIT do not apply to it. Soft: the refresh is asked to stop; hard: its worker is killed.
# At most a day (a refresh that runs longer is stuck), and the lock at most a week: the lock's expiry is a date
# (pricing.services.feed_lock_acquire), and a value far above these overflowed the calendar on every refresh.
PRICING_REFRESH_TIME_LIMIT_MAX_S = 24 * 3600
PRICING_LOCK_TTL_MAX_S = 7 * 24 * 3600
PRICING_REFRESH_SOFT_TIME_LIMIT_S = env_int(
    "PRICING_REFRESH_SOFT_TIME_LIMIT_S", 600, minimum=1, maximum=PRICING_REFRESH_TIME_LIMIT_MAX_S
)
PRICING_REFRESH_TIME_LIMIT_S = env_int(
    "PRICING_REFRESH_TIME_LIMIT_S", 660, minimum=1, maximum=PRICING_REFRESH_TIME_LIMIT_MAX_S
)
require_order(
    ("PRICING_REFRESH_SOFT_TIME_LIMIT_S", PRICING_REFRESH_SOFT_TIME_LIMIT_S),
    ("PRICING_REFRESH_TIME_LIMIT_S", PRICING_REFRESH_TIME_LIMIT_S),
)
# The refresh lock expires after this; a shorter lock than a refresh may run would let a second refresh take over a
# live one (and record it as "worker died"), so it is refused.
PRICING_LOCK_TTL_S = env_int("PRICING_LOCK_TTL_S", 30 * 60, minimum=60, maximum=PRICING_LOCK_TTL_MAX_S)
require_at_least(
    ("PRICING_LOCK_TTL_S", PRICING_LOCK_TTL_S),
    ("PRICING_REFRESH_TIME_LIMIT_S", PRICING_REFRESH_TIME_LIMIT_S),
    "a refresh's hard time limit; a shorter lock lets a second refresh take over a live one",
)
# Beat: one entry per feed, every N hours (SkyPilot refreshes its catalog every 7 h; list prices move daily).
PRICING_REFRESH_HOURS = {
    feed: env_window(f"PRICING_REFRESH_HOURS_{feed.upper()}", hours, minimum=1, unit_s=3600)
    for feed, hours in {"aws": 24, "azure": 24, "gcp": 24, "lambda": 6, "skypilot": 7}.items()
}
for _feed, _hours in PRICING_REFRESH_HOURS.items():
    CELERY_BEAT_SCHEDULE[f"refresh-prices-{_feed}"] = {
        "task": "pricing.tasks.refresh_feed",
        "schedule": _hours * 3600.0,
        "args": (_feed,),
        "options": {"expires": _hours * 3600.0 / 2},
    }

# Errors the Redis cache ignores are still logged (once a minute: LOGGING below).
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
if REDIS_URL:
    # django-redis with IGNORE_EXCEPTIONS (core/cache.py): while Redis is down reads miss and writes are
    # dropped, so throttles and pages keep answering; short timeouts keep a dead Redis from stalling requests.
    CACHES = {
        "default": {
            "BACKEND": "core.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 2},
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
    # Then: query parameters the OpenAPI document does not declare are a 400 (core/api/query.py).
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "core.api.query.KnownQueryParameters"],
    "DEFAULT_SCHEMA_CLASS": "advisor.api.schema.ProblemAutoSchema",
    # JSON out (tabular views add CSV); /api/docs/ is the interactive browser, not DRF's browsable API.
    "DEFAULT_RENDERER_CLASSES": ["core.api.renderers.StoredTextJSONRenderer"],
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
        "anon": env_rate("API_THROTTLE_ANON", "60/minute"),
        "user": env_rate("API_THROTTLE_USER", "2000/hour"),
        # CPU-heavy: each advice runs the estimator over every size; each PDF renders a document.
        "advice": env_rate("API_THROTTLE_ADVICE", "600/hour"),
        "pdf": env_rate("API_THROTTLE_PDF", "120/hour"),
    },
}
# How long a POST's Idempotency-Key is remembered (draft-ietf-httpapi-idempotency-key-header: keys expire; 24 h
# is Stripe's documented retention, stripe.com/docs/api/idempotent_requests, read 2026-12).
IDEMPOTENCY_KEY_TTL_S = env_window("IDEMPOTENCY_KEY_TTL_S", 24 * 3600, minimum=60)

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Advisor API",
    "DESCRIPTION": "Rent or buy GPUs: advice, prices, calibrations and proposals.",
    "VERSION": "1.0.0",
    # 3.1: schemas are JSON Schema 2020-12, so the Scenario and Advice JSON Schemas embed unchanged.
    "OAS_VERSION": "3.1.0",
    "COMPONENT_SPLIT_REQUEST": True,
    # Last: embeds the Scenario/Advice JSON Schemas after drf-spectacular's own (in-place) post-processing.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "advisor.api.schema.embed_documents"],
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Security: strict unless DEBUG. Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER. ---
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=PRODUCTION)
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=PRODUCTION)
SECURE_HSTS_SECONDS = env_window("SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_HSTS_PRELOAD = PRODUCTION
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("USE_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"once_a_minute": {"()": "core.cache.OncePerInterval"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    # A Redis outage: one logged error (with its traceback) a minute, not one per cache call.
    "loggers": {"django_redis.cache": {"filters": ["once_a_minute"]}},
    "root": {"handlers": ["console"], "level": env_choice("LOG_LEVEL", "INFO", choices=LOG_LEVELS)},
}

# --- Serving that holds (issue 25): embedded SQLite, PostgreSQL timeouts, sessions, HEAD. ---
# Time windows are read with env_window (config/env.py): at most a century, so that date arithmetic stays in range.
# The database timeouts are C ints too: libpq's connect_timeout in seconds, PostgreSQL's statement_timeout and SQLite's
# busy timeout (CPython passes sqlite3_busy_timeout(timeout * 1000)) in milliseconds.
# SQLite: WAL lets readers run beside the one writer; writes take the lock at BEGIN (IMMEDIATE), so
# two concurrent saves queue for up to SQLITE_BUSY_TIMEOUT_S instead of failing "database is locked".
SQLITE_BUSY_TIMEOUT_S = env_window("SQLITE_BUSY_TIMEOUT_S", 20, minimum=1, maximum=C_INT_MAX // 1000)
# PostgreSQL: give up connecting (and answer 503) after this; cancel any statement running longer.
DATABASE_CONNECT_TIMEOUT_S = env_window("DATABASE_CONNECT_TIMEOUT_S", 3, minimum=1, maximum=C_INT_MAX)
DATABASE_STATEMENT_TIMEOUT_MS = env_int("DATABASE_STATEMENT_TIMEOUT_MS", 30_000, minimum=100, maximum=C_INT_MAX)
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": SQLITE_BUSY_TIMEOUT_S,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = dict(SQLITE_OPTIONS)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    _options: dict[str, object] = DATABASES["default"].setdefault("OPTIONS", {})  # type: ignore[assignment]
    _options.update(
        {
            "connect_timeout": DATABASE_CONNECT_TIMEOUT_S,
            "options": f"-c statement_timeout={DATABASE_STATEMENT_TIMEOUT_MS}",
        }
    )
    # The ASGI server runs each request's view on its own thread, so a connection kept per thread is
    # never reused and piles up: Django's docs say to disable persistent connections under ASGI.
    DATABASES["default"]["CONN_MAX_AGE"] = env_window("DATABASE_CONN_MAX_AGE_S", 0, minimum=0)
# Sessions (anonymous planner state included) expire; beat clears the expired rows daily.
SESSION_COOKIE_AGE = env_window("SESSION_COOKIE_AGE_S", 14 * 24 * 3600, minimum=300)
# The only user-sized thing kept for an anonymous visitor: the planner input across sign-in (advisor/web/pending.py).
ANONYMOUS_SESSION_MAX_BYTES = env_int("ANONYMOUS_SESSION_MAX_BYTES", 16 * 1024, minimum=1024)
CELERY_BEAT_SCHEDULE["requeue-stalled-fits"] = {
    "task": "advisor.requeue_stalled_fits",
    "schedule": 15 * 60.0,
    "options": {"expires": 10 * 60.0},
}
CELERY_BEAT_SCHEDULE["clear-expired-sessions"] = {
    "task": "core.tasks.clear_expired_sessions",
    "schedule": 24 * 3600.0,
    "options": {"expires": 12 * 3600.0},
}
# After a Redis or broker failure, skip it for this long instead of waiting on every call (core/breaker.py).
DEPENDENCY_BREAKER_OPEN_S = env_window("DEPENDENCY_BREAKER_OPEN_S", 15, minimum=1)
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
# Fleet plans: hours of runs placed, each run's hours plus its wait (the 100,000 runs allowed, each waiting up to a
# year, would be 876M, many minutes; FLEET_MAX_PLAN_STEPS below counts them again times the candidate owned sizes).
FLEET_MAX_PLACEMENT_HOURS = env_int("FLEET_MAX_PLACEMENT_HOURS", 2_000_000, minimum=8760)  # one run of a year
# Fleet plans: simulation steps, the candidate owned sizes (a few hundred at most, more for a higher peak) times the
# hours the runs hold, 8 x those they may wait, 100 per run, the year and the peak's nodes (about 20 ns each at most:
# advisor.advice.fleet.plan.PlanWork; bench/fleet.py's 200-job mix is 213M).
FLEET_MAX_PLAN_STEPS = env_int("FLEET_MAX_PLAN_STEPS", 300_000_000, minimum=1_000_000)
