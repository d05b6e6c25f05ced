"""The profiler users run on their own GPU machine (`python -m estimator.profile`).

Its parts are split so that everything except the measurements themselves is pure Python:
`gpu_ids` maps device names to the GPU ids of DESIGN.md, `results` turns measurements into
profiled-run CSV rows, and `bench`/`launch` hold the torch code. torch is an optional
dependency (the `profiler` extra), imported only inside the functions that measure.
"""
