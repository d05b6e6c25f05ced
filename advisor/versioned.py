"""Owner-scoped documents kept with every version (saved scenarios and saved fleets).

Each write stores the new state as the next version through the model's `versions` relation, so an
overwrite loses nothing; the row is locked while numbering so concurrent saves get distinct numbers.
Names are checked by `core.textcheck.clean_name` with the saved item's own maximum length."""

from __future__ import annotations

import unicodedata
from typing import Any, Protocol, TypeVar

from django.db import models, transaction
from django.db.models import Manager, Max

from core.fields import char_max_length
from core.textcheck import clean_name as clean_text


class DocumentNameError(ValueError):
    """The name is empty, too long, or not one line of text."""


class DocumentNameConflict(ValueError):
    """The saved item's name and its document's own ``name`` differ."""

    def __init__(self, *, name: str, document_name: str):
        # Says only what saves at every door: the API requires the envelope's name, so "give one of them" sent a
        # client that dropped it to "This field is required".
        super().__init__(
            f"the name {name!r} and the document's own name {document_name!r} differ; give the same name in both, "
            f"or leave the document's own name out (it then takes the name {name!r})"
        )


def named_document(*, name: str, document: dict[str, Any], model: type[models.Model]) -> tuple[str, dict[str, Any]]:
    """The item's name, checked as stored (``clean_document_name``: DocumentNameError), and the document carrying
    it as its own ``name``, so one item has one name: the list and a proposal's title read the item's, the advice,
    PDF assumptions and workbook the document's (which defaults to "Untitled ..." where absent). A document naming
    itself otherwise raises DocumentNameConflict."""
    name = clean_document_name(name, model=model)
    own = document.get("name")
    # Compared and stored as the item's name is, stripped: " base " was accepted beside "base" and kept unstripped in
    # the document (so in the advice and PDF), and a blank one is no name, as "" is.
    if own is not None and unicodedata.normalize("NFC", own.strip()) != name and own.strip() != "":
        raise DocumentNameConflict(name=name, document_name=own)
    return name, {**document, "name": name}


class VersionedDocument(Protocol):
    pk: Any
    name: str
    document: Any
    versions: Any  # the reverse relation of the version model (related_name="versions")

    def save(self, *args: Any, **kwargs: Any) -> None: ...


DocumentT = TypeVar("DocumentT", bound=models.Model)


def clean_document_name(name: str, *, model: type[models.Model]) -> str:
    """A saved item's name, stripped and checked (no NUL, unpaired surrogates, controls or line breaks);
    DocumentNameError when empty or longer than the model's `name` column."""
    try:
        return clean_text(name, max_length=char_max_length(model, "name"))
    except ValueError as error:
        raise DocumentNameError(f"name: {error}") from None


def record_version(item: VersionedDocument) -> Any:
    last = item.versions.aggregate(last=Max("number"))["last"] or 0
    return item.versions.create(number=last + 1, name=item.name, document=item.document)


@transaction.atomic
def versioned_create(*, objects: Manager[DocumentT], owner: Any, name: str, document: Any) -> DocumentT:
    item = objects.create(owner=owner, name=clean_document_name(name, model=objects.model), document=document)
    record_version(item)  # type: ignore[arg-type]
    return item


@transaction.atomic
def versioned_update(
    *, objects: Manager[DocumentT], item: DocumentT, name: str | None = None, document: Any | None = None
) -> DocumentT:
    """Overwrite name and/or document; the new state becomes the next version."""
    locked: Any = objects.select_for_update().get(pk=item.pk)
    if name is not None:
        locked.name = clean_document_name(name, model=objects.model)
    if document is not None:
        locked.document = document
    locked.save()
    record_version(locked)
    return locked
