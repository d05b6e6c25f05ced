from django.apps import AppConfig


class AdvisorConfig(AppConfig):
    name = "advisor"
    verbose_name = "GPU Advisor"

    def ready(self) -> None:
        from advisor import signals  # noqa: F401 - connects the receivers
