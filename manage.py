#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    from config.runenv import adopt

    adopt()  # the settings `make run` started the server with, unless told otherwise (config/runenv.py)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # Commands work in a development checkout without extra variables; a production
    # environment always sets DJANGO_SECRET_KEY, and so stays in production mode.
    os.environ.setdefault(
        "SERVICE_ENV", "production" if os.environ.get("DJANGO_SECRET_KEY") else "development"
    )
    from django.core.management import execute_from_command_line

    from core.cli import connection_failure

    try:
        execute_from_command_line(sys.argv)
    except Exception as exc:
        line = connection_failure(exc)
        if line is None or "--traceback" in sys.argv:
            raise
        command = sys.argv[1] if len(sys.argv) > 1 else "manage.py"
        print(f"{command}: {line}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
