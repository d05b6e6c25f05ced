"""Throughput estimator: a pure numerical core (numpy/scipy, no Django, no I/O beyond its bundled data).

Public API:
    estimator.predict(job, cluster, sizes, calibration) -> Prediction   (vectorized over cluster sizes)
    estimator.specs.get_gpu / GPU_IDS, estimator.workload.TrainingJob / Cluster
    estimator.calibrate.fit / load_default / Calibration
    estimator.runs.read_runs_csv / runs_from_records / write_predictions_csv
"""

from estimator.prediction import Prediction, predict, predict_runs, smallest_fitting_size

__all__ = ["Prediction", "predict", "predict_runs", "smallest_fitting_size"]
