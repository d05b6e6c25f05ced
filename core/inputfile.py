"""Files a management command reads (scenarios, fleets, usage and run CSVs, saved price payloads): at most a
limit's worth of bytes, so that /dev/zero or a mistaken multi-gigabyte file is a one-line error naming the file and
the limit (exit 2), not a MemoryError traceback after gigabytes are allocated.

The limits are settings: MAX_INPUT_FILE_BYTES for documents and CSVs (well above the API's body limit, so that a
file the API would refuse still runs here), MAX_PRICE_FILE_BYTES for saved provider payloads (bulk offer files
are large)."""

from __future__ import annotations

import sys
from pathlib import Path

from django.conf import settings


class InputFileTooLarge(OSError):
    """The file holds more than ``limit`` bytes (an OSError: every reader already reports those naming the file)."""

    def __init__(self, *, limit: int, setting: str) -> None:
        super().__init__(f"larger than {limit:,} bytes (the limit, {setting}); give a smaller file")
        self.limit = limit


def read_input_text(path: str | Path, *, setting: str = "MAX_INPUT_FILE_BYTES", encoding: str = "utf-8-sig") -> str:
    """The text of ``path`` ("-": standard input), reading at most the limit (the setting named ``setting``) + 1
    bytes; InputFileTooLarge above it, OSError or UnicodeDecodeError as reading and decoding raise them. Standard
    input is read as bytes too, so the limit counts bytes either way (a hostile probe: 80 MB of 'é' was refused as a
    file and read whole through '-', the text layer counting characters)."""
    limit: int = getattr(settings, setting)
    if str(path) == "-":
        stream = getattr(sys.stdin, "buffer", None)  # a text stream without one (a test's StringIO): its encoding
        raw = stream.read(limit + 1) if stream is not None else sys.stdin.read(limit + 1).encode("utf-8")
        if len(raw) > limit:
            raise InputFileTooLarge(limit=limit, setting=setting)
        return raw.decode(encoding)
    with Path(path).open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputFileTooLarge(limit=limit, setting=setting)
    return data.decode(encoding)
