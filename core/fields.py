"""Limits read from the model fields themselves, so a validation message quotes the column's own limit."""

from __future__ import annotations

from django.db import models


def char_max_length(model: type[models.Model], name: str) -> int:
    """`max_length` of the CharField `name` of `model` (the stubs allow None; a CharField always has one)."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.CharField) or field.max_length is None:
        raise TypeError(f"{model.__name__}.{name} is not a CharField with a max_length")
    return field.max_length
