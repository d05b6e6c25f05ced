from django.apps import AppConfig


class PricingConfig(AppConfig):
    name = "pricing"
    verbose_name = "Prices"
