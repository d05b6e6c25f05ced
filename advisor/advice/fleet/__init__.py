"""The fleet plan: how many GPUs to own, what to commit to and what to rent for a year's job mix.

Pure core (numpy and frozen dataclasses, no Django): ``demand`` (the year's runs and measured usage,
hour by hour), ``placement`` (whole runs on owned capacity, vectorised over candidate owned sizes),
``plan`` (tiers, costs, the load-duration and simulated answers). ``document`` parses the Fleet Plan
JSON (reusing the Scenario's validation); ``pricing`` prices the tiers with the advice package's own
functions (ownership costs, rental offers) and takes workload jobs' run hours from ``advise()``;
``service.fleet_plan`` ties them together for the CLI, API and page. Saved fleets, their pictures and
their PDF are renderings and live in ``advisor.fleet``.
"""
