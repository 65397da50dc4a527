#!/usr/bin/env python
"""Django's command-line utility."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    if sys.argv[1:2] == ["doctor"]:
        # Doctor reports a bad configuration as its own failing check: the start must let it run.
        from chat.apps import ChatConfig

        ChatConfig.refuse_bad_configuration = False
    try:
        # Settings and the apps' start (bad RESEARCH_* settings, a provider not available): a line naming the
        # setting, not a traceback. The command's own setup finds the apps ready.
        django.setup()
    except ImproperlyConfigured as exc:
        sys.exit(f"Configuration error: {exc}")

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
