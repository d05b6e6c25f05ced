"""Throughput estimator: a pure numerical core (numpy/scipy, no Django, no I/O beyond its bundled data)."""
