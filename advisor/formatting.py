"""Numbers as a person writes them, for every rendering of an Advice (planner page, saved scenarios, PDF):
"1T tokens", "1 node", "an 8-GPU node", "50 ms". One module so the page and the PDF say the same thing.

Every function takes a number or None and returns text; None (a figure that does not exist) becomes
``MISSING``, never "None" or "?"."""

from __future__ import annotations

import math
from typing import Any, Final

MISSING: Final[str] = "n/a"
# Short scale (English): thousand, million, billion, trillion, quadrillion.
_SCALE: Final[tuple[tuple[float, str], ...]] = ((1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def plain(value: Any, *, digits: int = 3) -> str:
    """A number with at most ``digits`` significant digits and no trailing zeros (7.0 -> 7, 0.0500 -> 0.05)."""
    number = _finite(value)
    if number is None:
        return MISSING
    if number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    if abs(number) >= 10 ** (digits - 1):
        # Whole units once the integer part has all the digits asked for: "190", never "1.9e+02".
        return f"{number:,.0f}"
    return f"{number:.{digits}g}"


def short(value: Any, *, digits: int = 3) -> str:
    """1e12 -> "1T", 1.5e13 -> "15T", 7e9 -> "7B", 950 -> "950"."""
    number = _finite(value)
    if number is None:
        return MISSING
    for scale, suffix in _SCALE:
        if abs(number) >= scale:
            return f"{plain(number / scale, digits=digits)}{suffix}"
    return plain(number, digits=digits)


def tokens(value: Any) -> str:
    """A token count: "1T tokens", "300B tokens"."""
    return MISSING if _finite(value) is None else f"{short(value)} tokens"


def count(value: Any, singular: str, plural: str | None = None) -> str:
    """ "1 node", "2 nodes", "1 replica"."""
    number = _finite(value)
    if number is None:
        return MISSING
    word = singular if number == 1 else (plural or singular + "s")
    return f"{plain(number)} {word}"


def runs(value: Any) -> str:
    """A share of runs: one decimal from one run up ("19.5"), two significant digits below it ("0.011"), so that a
    part of a run that costs money never reads "0.0" (a hostile review, F10: "renting the 0.0 runs a year", $943)."""
    number = _finite(value)
    if number is None:
        return MISSING
    return f"{number:.1f}" if abs(number) >= 1 else f"{number:.2g}"


def runs_a_year(value: Any) -> str:
    """ "1 run a year", "4 runs a year", "0.5 runs a year"."""
    return MISSING if _finite(value) is None else f"{count(value, 'run')} a year"


def article(phrase: str) -> str:
    """ "a" or "an" as the phrase is spoken: an 8-GPU node, an 11-GPU node, a 4-GPU node, an hour."""
    spoken = phrase.lstrip()
    digits = spoken[: len(spoken) - len(spoken.lstrip("0123456789"))]
    if digits:
        return "an" if digits.startswith("8") or digits in ("11", "18") else "a"
    return "an" if spoken[:1].lower() in tuple("aeiou") or spoken.lower().startswith("hour") else "a"


def node_of(gpus_per_node: Any, noun: str = "node") -> str:
    """ "an 8-GPU node", "a 4-GPU node", "an 8-GPU server" (``noun``)."""
    number = _finite(gpus_per_node)
    if number is None:
        return f"{article(noun)} {noun}"
    phrase = f"{plain(number)}-GPU {noun}"
    return f"{article(phrase)} {phrase}"


def gpus_on_nodes(gpus: Any, nodes: Any) -> str:
    """ "8 GPUs on 1 node", "64 GPUs on 8 nodes", "1 GPU"."""
    if _finite(gpus) is None:
        return MISSING
    text = count(gpus, "GPU")
    return text if _finite(nodes) is None else f"{text} on {count(nodes, 'node')}"


# Money below this many dollars keeps its cents: a run's "$4" beside the reasons' "$4.26" broke a hand check.
CENTS_BELOW_USD: Final[float] = 100
# A price per GPU-hour keeps up to the catalog's six decimals (pricing.models stores six), past the cents only where
# they are not zero, so GPUs x hours x the stated price re-adds to the stated cost ("$2.13375", not "$2.13").
PRICE_DECIMALS: Final[int] = 6
# Hours below this keep a tenth ("takes 1.4 hours", where "takes 1 hours (P10-P90 1-1)" hid the run time).
TENTHS_BELOW_HOURS: Final[float] = 10


def _signed_usd(number: float, digits: str) -> str:
    """ "$" and the digits, the sign first; never "-$0" or "-$0.00"."""
    return f"-${digits}" if number < 0 and digits.strip("0.,") else f"${digits}"


def usd(value: Any, *, compact: bool = False) -> str:
    """An amount of money, as every rendering writes it: cents below ``CENTS_BELOW_USD`` ("$4.26"), whole dollars
    above ("$1,234,567"), the sign first ("-$2,282,882"); zero is "$0". ``compact`` (tables, chart axes) writes
    thousands and millions short: "$1.5k", "$25k", "$1.23M"."""
    number = _finite(value)
    if number is None:
        return MISSING
    magnitude = abs(number)
    if number == 0:
        digits = "0"
    elif compact and magnitude >= 1e6:
        digits = f"{magnitude / 1e6:,.2f}M"
    elif compact and magnitude >= 1e4:
        digits = f"{magnitude / 1e3:,.0f}k"
    elif compact and magnitude >= 1e3:
        digits = f"{magnitude / 1e3:,.1f}k"
    elif round(magnitude, 2) < CENTS_BELOW_USD:
        digits = f"{magnitude:,.2f}"
    else:
        digits = f"{round(magnitude):,}"
    return _signed_usd(number, digits)


def price(value: Any) -> str:
    """A price per unit (USD per GPU-hour) with the decimals it has, up to ``PRICE_DECIMALS`` and at least the cents:
    2.13375 -> "$2.13375", 2.95 -> "$2.95", 3 -> "$3.00"."""
    number = _finite(value)
    if number is None:
        return MISSING
    whole, _, decimals = f"{abs(number):,.{PRICE_DECIMALS}f}".partition(".")
    return _signed_usd(number, f"{whole}.{decimals.rstrip('0').ljust(2, '0')}")


def hours(value: Any) -> str:
    """A duration in hours: a tenth below ``TENTHS_BELOW_HOURS`` ("1.0 hours", "9.5 hours"), whole hours above
    ("12 hours", "1,234 hours")."""
    return MISSING if _finite(value) is None else f"{hours_number(value)} hours"


def hours_number(value: Any) -> str:
    """The number of ``hours`` alone (a P10-P90 range: "1.1-1.4")."""
    number = _finite(value)
    if number is None:
        return MISSING
    tenths = round(number, 1)
    return f"{tenths:,.1f}" if abs(tenths) < TENTHS_BELOW_HOURS else f"{number:,.0f}"


def duration_s(value: Any) -> str:
    """A latency: "50 ms" below a second, "1.2 s" above."""
    number = _finite(value)
    if number is None:
        return MISSING
    if abs(number) < 1:
        return f"{plain(number * 1000, digits=2)} ms"
    return f"{plain(number, digits=3)} s"


# A fraction too small to show at the digits asked for keeps this many significant digits (0.0016 -> "0.16%", not
# "0%": a utilization of 0% reads as "never used").
SMALL_PERCENT_DIGITS: Final[int] = 2
# Fixed-point decimals a small percentage may take; below them it is written in general notation ("1.9e-298%"):
# a fraction of 1e-300 printed 300 zeros.
MAX_PERCENT_DIGITS: Final[int] = 6


def percent(value: Any, *, digits: int = 0) -> str:
    """A fraction as a percentage: 0.6 -> "60%"; a nonzero fraction below what ``digits`` decimals show keeps
    ``SMALL_PERCENT_DIGITS`` significant digits (0.0016 -> "0.16%"; 1e-300 -> "1e-298%"); one that is not 1 never
    reads 100%: it takes the decimals that show the difference (0.99668 -> "99.7%", a finance probe read a break-even
    of "100% utilization (8,731 hours a year)")."""
    number = _finite(value)
    if number is None:
        return MISSING
    share = number * 100
    if share != 0 and abs(share) < 10**-digits:
        digits = SMALL_PERCENT_DIGITS - 1 - math.floor(math.log10(abs(share)))
        if digits > MAX_PERCENT_DIGITS:
            return f"{share:.{SMALL_PERCENT_DIGITS}g}%"
    while share != 100 and f"{share:.{digits}f}" == f"{100:.{digits}f}" and digits < MAX_PERCENT_DIGITS:
        digits += 1
    return f"{share:.{digits}f}%"
