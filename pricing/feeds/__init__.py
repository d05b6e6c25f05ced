"""The feed registry: one module per source, looked up by its public name."""

from __future__ import annotations

from importlib import import_module

from pricing.feeds.base import Feed

# Public feed name -> module (the Lambda module is lambda_cloud: `lambda` is a Python keyword).
FEED_MODULES: dict[str, str] = {
    "aws": "pricing.feeds.aws",
    "azure": "pricing.feeds.azure",
    "gcp": "pricing.feeds.gcp",
    "lambda": "pricing.feeds.lambda_cloud",
    "skypilot": "pricing.feeds.skypilot",
}
FEED_NAMES: tuple[str, ...] = tuple(FEED_MODULES)


class UnknownFeed(KeyError):
    pass


def get_feed(name: str) -> Feed:
    """A configured adapter instance for `name`; settings are read now, so tests can override them."""
    if name not in FEED_MODULES:
        raise UnknownFeed(f"unknown feed {name!r}; known feeds: {', '.join(FEED_NAMES)}")
    return import_module(FEED_MODULES[name]).from_settings()
