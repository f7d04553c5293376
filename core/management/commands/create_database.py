"""`manage.py create_database`: the PostgreSQL database DATABASE_URL names, created if its server answers
and it does not exist yet (what `make run` does before `migrate`, so that the README's
`DATABASE_URL=postgres://…/checkout make run` works on a fresh server). SQLite makes its file itself;
a database that exists is left alone."""

from __future__ import annotations

from typing import Any, cast

import psycopg
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from psycopg import sql


class Command(BaseCommand):
    help = "Create the PostgreSQL database DATABASE_URL names, if it does not exist yet."

    def handle(self, *args, **options):
        config = connections["default"].settings_dict
        if config["ENGINE"] != "django.db.backends.postgresql":
            return
        name = config["NAME"]
        server = {
            "host": config.get("HOST") or None,
            "port": config.get("PORT") or None,
            "user": config.get("USER") or None,
            "password": config.get("PASSWORD") or None,
            "dbname": "postgres",
            "connect_timeout": 5,
        }
        try:
            with psycopg.connect(**cast(dict[str, Any], server), autocommit=True) as admin:
                if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                    return
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.errors.InsufficientPrivilege:
            raise CommandError(
                f"the database {name!r} does not exist and this user may not create it: create it, then run again"
            ) from None
        except psycopg.OperationalError as exc:
            raise CommandError(
                f"cannot reach the database server: {str(exc).strip().splitlines()[0]}"
            ) from None
        self.stdout.write(f"Created the PostgreSQL database {name}.")
