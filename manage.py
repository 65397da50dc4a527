#!/usr/bin/env python
"""Django's command-line utility."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 (loads the settings: a bad one is a line naming it, not a traceback)
    except ImproperlyConfigured as exc:
        sys.exit(f"Configuration error: {exc}")

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
