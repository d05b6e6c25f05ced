"""The API tests' clients and helpers (tokens, fast password hashing) for the serving tests too."""

from tests.api.conftest import alice, anon, bob, carol, client_for, fast_password_hashing  # noqa: F401
