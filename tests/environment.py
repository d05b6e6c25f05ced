"""Loaded with `-p tests.environment` before Django reads its settings: test defaults that a
caller's environment may override (CI sets DATABASE_URL and REDIS_URL)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "advisor.settings")
os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-0123456789abcdef")
os.environ.setdefault("DEBUG", "0")
# Tests speak plain HTTP to the test client and the live server.
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("SESSION_COOKIE_SECURE", "0")
os.environ.setdefault("CSRF_COOKIE_SECURE", "0")
os.environ.setdefault("SECURE_HSTS_SECONDS", "0")
os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
os.environ.setdefault("STATIC_MANIFEST", "0")
