from django.apps import AppConfig


class AdvisorConfig(AppConfig):
    name = "advisor"
    verbose_name = "GPU Advisor"

    def ready(self) -> None:
        # Registers the app's Celery tasks in every process (web too, not only workers that autodiscover): the
        # calibration services enqueue the fit task by name.
        from advisor import (
            signals,  # noqa: F401 - connects the receivers
            tasks,  # noqa: F401
        )
