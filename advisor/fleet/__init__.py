"""Saved fleet plans and their renderings: models and store (versioned, owner-scoped), the user-facing
service (the user's calibration), pictures (``charts``) and the PDF (``proposal``). The plan itself is
computed by the advice package (``advisor.advice.fleet``)."""
