#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        # Read the settings here: Django's own runner would defer the error and end in a traceback.
        settings.INSTALLED_APPS  # noqa: B018
    except ImproperlyConfigured as error:
        print(f"configuration error: {error}", file=sys.stderr)
        sys.exit(2)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
