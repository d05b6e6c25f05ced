"""`manage.py create_api_token USERNAME [--name NAME]`: create the user if needed, print a new token key."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser
from django.db import models

from advisor.api.tokens import TokenNameError, api_token_create
from core.commands import DatabaseCommand
from core.exitcodes import INVALID_INPUT


class Command(DatabaseCommand):
    help = "Create USERNAME if it does not exist (without a usable password) and print a new API token for it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="What the token is for (shown on the token page).")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        username = username.strip()
        if not username:
            raise CommandError("USERNAME must not be empty")
        user_model = get_user_model()
        try:
            # The model's own username rules (Django's: letters, digits and @.+-_), which get_or_create does not
            # run: a hostile probe created a user named 'u\x1bser' while --name refused control characters.
            field = user_model._meta.get_field(user_model.USERNAME_FIELD)
            assert isinstance(field, models.Field)  # a concrete column, never a relation
            field.run_validators(username)
        except ValidationError as error:
            reason = " ".join(error.messages).rstrip(".")
            raise CommandError(f"USERNAME: {reason}; got {username[:40]!r}", returncode=INVALID_INPUT) from error
        lookup: dict[str, Any] = {user_model.USERNAME_FIELD: username}
        user, created = user_model.objects.get_or_create(**lookup)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            self.stderr.write(f"created user {username!r} (no password; set one with changepassword)")
        try:
            issued = api_token_create(user=user, name=name)
        except TokenNameError as error:
            raise CommandError(f"--name: {error}") from error
        self.stdout.write(issued.key)
