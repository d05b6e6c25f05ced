"""The fleet plan: how many GPUs to own, what to commit to and what to rent for a year's job mix.

Pure core (numpy and frozen dataclasses, no Django): ``demand`` (the year's runs and measured usage,
hour by hour), ``placement`` (whole runs on owned capacity, vectorised over candidate owned sizes),
``plan`` (tiers, costs, the load-duration and simulated answers). ``document`` parses the Fleet Plan
JSON (reusing the Scenario's validation); ``pricing`` turns its rent/buy sections into tier prices
through the advice pipeline; ``service`` ties them together for the CLI, API and page.
"""
