"""Fixtures shared by the estimator tests."""

from __future__ import annotations

import builtins
import io
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def opened_files(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every file path read while the test runs (Path.read_text, Path.open and open)."""
    seen: list[str] = []
    read_text, path_open, plain_open = pathlib.Path.read_text, pathlib.Path.open, builtins.open

    def spy_read_text(self: pathlib.Path, *args: Any, **kwargs: Any) -> str:
        seen.append(str(self))
        return read_text(self, *args, **kwargs)

    def spy_path_open(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(self))
        return path_open(self, *args, **kwargs)

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(file))
        return plain_open(file, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", spy_read_text)
    monkeypatch.setattr(pathlib.Path, "open", spy_path_open)
    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    yield seen
