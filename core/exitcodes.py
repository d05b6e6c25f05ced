"""Exit statuses of the management commands: one definition, shared by every app's commands."""

from __future__ import annotations

from typing import Final

# The contract of DESIGN.md: a command given bad input (a file it cannot read, a bad value, an unknown name) exits
# with status 2, as argparse does for a bad command line.
INVALID_INPUT: Final[int] = 2

# The database could not be reached: the environment failed, not the input, so the status of any other failed
# command (CommandError's default), as `refresh_prices` exits when a feed's run could not be saved.
DATABASE_UNAVAILABLE: Final[int] = 1
