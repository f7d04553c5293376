#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Commands work in a development checkout without extra variables; a production
    # environment always sets DJANGO_SECRET_KEY, and so stays in production mode.
    os.environ.setdefault(
        "SERVICE_ENV", "production" if os.environ.get("DJANGO_SECRET_KEY") else "development"
    )
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
