"""The feed registry: one module per source, looked up by its public name.

A feed may be a group of parts refreshed on their own: `skypilot` is one feed per cloud
(`skypilot:runpod`, ...), so one cloud's failure is that cloud's failed run.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from pricing.feeds.base import Feed, OfferRecord, Rejection

FileReader = Callable[..., list[OfferRecord | Rejection]]

# Public feed name -> module (the Lambda module is lambda_cloud: `lambda` is a Python keyword).
FEED_MODULES: dict[str, str] = {
    "aws": "pricing.feeds.aws",
    "azure": "pricing.feeds.azure",
    "gcp": "pricing.feeds.gcp",
    "lambda": "pricing.feeds.lambda_cloud",
    "skypilot": "pricing.feeds.skypilot",
}
FEED_NAMES: tuple[str, ...] = tuple(FEED_MODULES)
PART_SEPARATOR = ":"
# The length of FeedRun.feed, Offer.feed and FeedLock.feed: 20 was too short for "skypilot:" and the
# SkyPilot catalog's longest cloud ("skypilot:primeintellect" is 23); migration 0002 widened them.
FEED_NAME_MAX = 40


class UnknownFeed(KeyError):
    pass


class UnknownFeedPart(ValueError):
    """The feed exists but has no such part (a cloud SkyPilot's catalog does not hold), or no parts at all."""


def get_feed(name: str) -> Feed:
    """A configured adapter instance for `name` (a feed or one part of a group, e.g. `skypilot:cudo`);
    settings are read now, so tests can override them."""
    group, _, part = _known(name)
    module = import_module(FEED_MODULES[group])
    return module.cloud_from_settings(part) if part else module.from_settings()


def _known(name: str) -> tuple[str, str, str]:
    """`name` split at the part separator; UnknownFeed when it names no feed (or no part of a group)."""
    group, separator, part = name.partition(PART_SEPARATOR)
    if group not in FEED_MODULES or (part and not _is_group_module(group)):
        raise UnknownFeed(f"unknown feed {name!r}; known feeds: {', '.join(FEED_NAMES)}")
    return group, separator, part


def _is_group_module(group: str) -> bool:
    return hasattr(import_module(FEED_MODULES[group]), "cloud_from_settings")


def refreshable(name: str) -> str:
    """`name` when a refresh of it can run: a feed, or a known part of a group (`skypilot:cudo`).
    UnknownFeed names the feeds; UnknownFeedPart names the group's known parts."""
    group, separator, part = name.partition(PART_SEPARATOR)
    if group not in FEED_MODULES:
        raise UnknownFeed(f"unknown feed {name!r}; known feeds: {', '.join(FEED_NAMES)}")
    if not part and not separator:
        return name
    if not _is_group_module(group):
        raise UnknownFeedPart(f"feed {group!r} has no parts; refresh it as {group!r}")
    module = import_module(FEED_MODULES[group])
    refused: dict[str, str] = module.refused_parts() if hasattr(module, "refused_parts") else {}
    if part in refused:
        raise UnknownFeedPart(f"{group}{PART_SEPARATOR}{part} is refused: {refused[part]}")
    known: list[str] = module.known_parts()
    if part not in known:
        raise UnknownFeedPart(
            f"{group} has no part {part!r}; known: {', '.join(f'{group}{PART_SEPARATOR}{p}' for p in known)}"
        )
    return name


def feed_units(name: str) -> list[str]:
    """The names that are refreshed on their own for `name`: its parts for a group, else itself."""
    if name in FEED_MODULES and _is_group_module(name):
        return list(get_feed(name).parts())  # type: ignore[attr-defined]
    _known(name)
    return [name]


def file_reader(name: str) -> FileReader:
    """The adapter's reader of saved payloads (`import_prices`): `reader(paths, cloud=...)`."""
    if name not in FEED_MODULES:
        raise UnknownFeed(f"unknown feed {name!r}; known feeds: {', '.join(FEED_NAMES)}")
    reader: FileReader = import_module(FEED_MODULES[name]).records_from_files
    return reader


def import_unit(name: str, cloud: str | None) -> str:
    """The feed (part) imported offers belong to, so a later live refresh of it takes them over."""
    unit = f"{name}{PART_SEPARATOR}{cloud}" if cloud and _is_group_module(name) else name
    if len(unit) > FEED_NAME_MAX:
        raise UnknownFeed(f"feed name {unit!r} is longer than {FEED_NAME_MAX} characters; use a shorter --cloud")
    # A cloud no catalog knows would become a provider of its own, duplicating the real one's offers (a hostile
    # probe: --cloud vst beside vast); refresh_prices refuses such names the same way.
    return refreshable(unit)
