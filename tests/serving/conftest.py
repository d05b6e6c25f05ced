"""The API tests' clients and helpers (tokens, fast password hashing) for the serving tests too."""

from tests.api.conftest import _fast_password_hashing, alice, anon, bob, carol, client_for  # noqa: F401
