"""Validation of the price page's filters: bad values give a message, never a 500."""

from __future__ import annotations

from typing import Any

from django import forms

from pricing.feeds import FEED_NAMES, feed_units
from pricing.gpus import CANONICAL_GPUS
from pricing.models import Market, Provider

SORTS = {"usd_per_gpu_hour": "Cheapest per GPU-hour first", "-usd_per_gpu_hour": "Dearest per GPU-hour first"}


class OfferFilterForm(forms.Form):
    gpu = forms.ChoiceField(required=False, label="GPU")
    provider = forms.ChoiceField(required=False)
    market = forms.ChoiceField(required=False, choices=[("", "Any market"), *Market.choices])
    region = forms.CharField(required=False, max_length=60)
    sort = forms.ChoiceField(required=False, choices=list(SORTS.items()))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        gpu_field, provider_field = self.fields["gpu"], self.fields["provider"]
        assert isinstance(gpu_field, forms.ChoiceField) and isinstance(provider_field, forms.ChoiceField)
        gpu_field.choices = [("", "Any GPU"), *((gpu, gpu) for gpu in CANONICAL_GPUS)]
        provider_field.choices = [("", "Any provider"), *Provider.objects.values_list("slug", "name")]

    def clean(self) -> dict[str, Any] | None:
        # A filter given twice (?gpu=h100-sxm&gpu=l4) showed the last one's offers alone; the API answers 400.
        cleaned = super().clean()
        if hasattr(self.data, "getlist"):  # a QueryDict (a plain dict cannot repeat a name)
            for name in self.fields:
                if len(self.data.getlist(name)) > 1:
                    self.add_error(name, "Given more than once: choose one.")
        return cleaned

    def clean_region(self) -> str:
        region = self.cleaned_data["region"].strip()
        if region and not all(ch.isalnum() or ch in "-_ " for ch in region):
            raise forms.ValidationError("A region is letters, digits and dashes, e.g. us-east-1.")
        return region


def _feed_choices() -> list[tuple[str, str]]:
    """Every feed, then each part a group refreshes on its own (skypilot:<cloud>, as the API and refresh_prices take
    them: the page offered the five feed names only)."""
    parts = [unit for name in FEED_NAMES for unit in feed_units(name) if unit != name]
    return [("", "All feeds"), *((name, name) for name in (*FEED_NAMES, *parts))]


class RefreshForm(forms.Form):
    feed = forms.ChoiceField(required=False, choices=_feed_choices)
