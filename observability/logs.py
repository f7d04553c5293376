"""LOG_FORMAT=json: one JSON object per line (python-json-logger), with what the line is about.

Each line has `time` (UTC, ISO 8601), `level`, `logger` and `message`, then the ids set for what runs
now (`observability.context`): `request_id`, `organization_id`, `order_id`, `task_id`; and an exception's
traceback as `exc_info`. A message's line breaks are escaped by JSON, so a line is always one record.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from observability import context


class ContextFilter(logging.Filter):
    """Puts the current ids on every record (for either format), without overwriting a record's own."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in context.current().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


# Attributes Django and others attach that are objects, not facts: the request's repr carries its query
# string (a dashboard search can be a payer's address), the server's time is `time` already.
NOT_LOGGED = ["request", "server_time"]


class JsonLines(JsonFormatter):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, *NOT_LOGGED])
        super().__init__("%(levelname)s %(name)s %(message)s", *args, **kwargs)

    def add_fields(self, log_record: dict, record: logging.LogRecord, message_dict: dict) -> None:
        log_record["time"] = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        super().add_fields(log_record, record, message_dict)
