"""Loaded with `-p tests.environment` before Django reads its settings: test defaults that a
caller's environment may override (CI sets DATABASE_URL and REDIS_URL)."""

import os
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-0123456789abcdef")
os.environ.setdefault("DEBUG", "0")
# Tests speak plain HTTP to the test client and the live server.
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
os.environ.setdefault("STATIC_MANIFEST", "0")

# Each xdist worker gets its own Redis database: one worker's cache.clear() (a FLUSHDB) or throttle
# counts must not reach into another worker's tests.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if os.environ.get("REDIS_URL") and _worker.startswith("gw"):
    _parts = urlsplit(os.environ["REDIS_URL"])
    _base_db = int(_parts.path.lstrip("/") or 0)
    os.environ["REDIS_URL"] = urlunsplit(_parts._replace(path=f"/{_base_db + 1 + int(_worker[2:])}"))
