"""What every feed adapter produces, and the errors it may raise.

An adapter turns one provider's API into `OfferRecord`s and `Rejection`s. It never writes to the
database and never decides what is plausible: the refresh service validates every record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Protocol

from core.inputfile import InputFileTooLarge, read_input_text
from core.jsontext import parse_json_text
from pricing.gpus import canonical_gpu

Progress = Callable[[int, int, str], None]  # (done, total or 0 when unknown, note)


def no_progress(done: int, total: int, note: str) -> None:
    return None


class FeedError(Exception):
    """The feed could not produce a trustworthy set of offers; previous offers stay."""

    retryable = False


class FeedNetworkError(FeedError):
    """Timeouts, connection errors, HTTP 5xx/429, throttling: worth retrying later."""

    retryable = True


class FeedDataError(FeedError):
    """The response was malformed or truncated: retrying now would not help."""


class FeedNotFound(FeedError):
    """The URL does not exist (HTTP 404): retrying will not make it appear."""


class FeedFileError(FeedError):
    """A saved payload given to `import_prices` cannot be read as this feed's payload."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path


class MalformedRecord(ValueError):
    """One record of a payload (an instance type, a SKU, a product or a price term) has the wrong JSON shape:
    the adapter counts it as a `malformed_record` rejection and reads the rest, it never fails the run."""


class FeedNotConfigured(FeedError):
    """Credentials or settings are missing; reported as 'not configured', not as a failure."""


@dataclass(frozen=True, slots=True)
class OfferRecord:
    provider: str
    instance_type: str
    region: str
    market: str
    gpu_name: str
    gpu_count: Decimal
    usd_per_hour: Decimal
    source: str
    currency: str = "USD"
    vcpus: int | None = None
    memory_gib: Decimal | None = None
    effective_at: dt.datetime | None = None
    observed_at: dt.datetime | None = None
    gpu: str | None = None  # canonical id; filled from gpu_name when None

    @property
    def canonical_gpu(self) -> str | None:
        return self.gpu or canonical_gpu(self.gpu_name)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.instance_type, self.region, self.market)


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    detail: str


class Feed(Protocol):
    name: str
    label: str

    def is_configured(self) -> bool: ...

    def not_configured_reason(self) -> str: ...

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]: ...


def to_decimal(value: Any) -> Decimal | None:
    """A Decimal from a feed's number or numeric string; None when it is not a finite number."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


# No count a feed gives (vCPUs, MiB) has more digits. Beyond it an integer is refused before it is converted: a vCPU
# count of "1e5000" became a 5,001-digit int whose repr() raised (Python's 4,300-digit limit), a traceback out of
# import_prices (a hostile probe), and "1e100000000" would take the memory and time to build.
MAX_INTEGER_DIGITS = 18


class IntegerTooLarge(MalformedRecord):
    """A feed's integer of more than MAX_INTEGER_DIGITS digits; the message shows it in bounded form."""


def to_int(value: Any) -> int | None:
    """An int from a feed's integral number or numeric string ("96", 96.0); None when it is none (a fraction,
    text, JSON true). IntegerTooLarge beyond MAX_INTEGER_DIGITS digits, the only bound checked here: the range is
    the validation's business (`validate_offer`)."""
    if isinstance(value, bool):
        return None
    number = Decimal(value) if isinstance(value, int) else to_decimal(value)
    if number is None or number != number.to_integral_value():
        return None
    if number.copy_abs() >= Decimal(10) ** MAX_INTEGER_DIGITS:
        raise IntegerTooLarge(f"{number:.3e} has more than {MAX_INTEGER_DIGITS} digits")
    return int(number)


def shown(value: Any) -> str:
    """A value as a rejection's message writes it: a number as its digits, anything else as its repr(), never over
    40 characters. repr() of a 5,001-digit int raised ValueError (Python's 4,300-digit limit), a traceback out of
    import_prices, and a 5,000-digit Decimal wrote 5,000 characters into the run's rejection examples."""
    if type(value) is int and abs(value) >= 10**MAX_INTEGER_DIGITS:
        return f"an integer of more than {MAX_INTEGER_DIGITS} digits"
    text = str(value) if isinstance(value, Decimal) or type(value) is int else repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def vcpus_too_large(where: str, error: IntegerTooLarge) -> Rejection:
    """The record of a vCPU count to_int refuses: invalid_vcpus, as validation names a count outside the column."""
    return Rejection("invalid_vcpus", f"{where}: vcpus {error}")


def as_object(value: Any, what: str) -> dict[str, Any]:
    """`value` when it is a JSON object; MalformedRecord naming `what` otherwise."""
    if not isinstance(value, dict):
        raise MalformedRecord(f"{what} is {type(value).__name__}, not an object")
    return value


def as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise MalformedRecord(f"{what} is {type(value).__name__}, not a list")
    return value


def as_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise MalformedRecord(f"{what} is {type(value).__name__}, not text")
    return value


def parse_datetime(value: Any) -> dt.datetime | None:
    if not value:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    text = str(value).strip().replace("Z", "+00:00")
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def read_text(path: Path) -> str:
    """A saved payload's text, every feed's files read here. utf-8-sig: Excel's "CSV UTF-8" and Windows editors start
    the file with a byte order mark, which became part of the CSV's first column name ("missing columns
    ['InstanceType']") and which json refuses ("Unexpected UTF-8 BOM")."""
    try:
        return read_input_text(path, setting="MAX_PRICE_FILE_BYTES", encoding="utf-8-sig")
    except InputFileTooLarge as error:  # its own words name the limit; the class name read as noise (a probe)
        raise FeedFileError(path, str(error)) from error
    except (OSError, UnicodeDecodeError) as error:
        raise FeedFileError(path, f"unreadable ({type(error).__name__}: {error})") from error


def read_json(path: Path) -> Any:
    # The bounded reader (core.jsontext): json.loads recursed through 10,000 nested arrays into a RecursionError
    # traceback, and passed Python's own words on a 5,000-digit integer ("use sys.set_int_max_str_digits()").
    try:
        return parse_json_text(read_text(path))
    except ValueError as error:
        raise FeedFileError(path, f"not JSON ({error})") from error


def file_mtime(path: Path) -> dt.datetime:
    """When a saved payload was written, as the date of the prices it holds: no later than now. A modification time
    ahead of the clock (another machine's clock, a zip's local time read as UTC) is no provider's date: refusing every
    record for it lost good prices (a reviewer: a file 9 hours ahead), so such a file is dated when it is read."""
    return min(dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC), dt.datetime.now(dt.UTC))
