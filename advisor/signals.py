"""A password change ends the account's API tokens: whoever changes a password after a leak expects
every credential made with the old one to stop working."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone

from advisor.models import ApiToken

User = get_user_model()


@receiver(pre_save, sender=User, dispatch_uid="advisor.password_change_noted")
def note_password_change(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    instance._password_changed = False
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return  # a new account, or a save of other fields only (e.g. last_login on every sign-in)
    stored = sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    instance._password_changed = stored is not None and stored != instance.password


@receiver(post_save, sender=User, dispatch_uid="advisor.password_change_revokes_tokens")
def revoke_tokens_on_password_change(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    if created or not getattr(instance, "_password_changed", False):
        return
    instance._password_changed = False
    ApiToken.objects.filter(user=instance, revoked_at__isnull=True).update(revoked_at=timezone.now())
