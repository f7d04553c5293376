"""Each request's id, in and out and on its log lines; LOG_FORMAT=json's lines."""

from __future__ import annotations

import io
import json
import logging
import re

import pytest

from observability.logs import ContextFilter, JsonLines
from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def json_lines():
    """What the `django.request` and `audit` loggers write, as LOG_FORMAT=json writes it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonLines())
    handler.addFilter(ContextFilter())
    loggers = [logging.getLogger(name) for name in ("django.request", "tests.observability")]
    for logger in loggers:
        logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    for logger in loggers:
        logger.removeHandler(handler)


def test_a_callers_request_id_is_returned_and_logged(client, json_lines):
    response = client.get(
        "/no/such/thing?q=0x52908400098527886e0f7030069857d2e4169ee7", HTTP_X_REQUEST_ID="lb-7f3a:2"
    )
    assert response.status_code == 404 and response["X-Request-ID"] == "lb-7f3a:2"
    (line,) = json_lines()
    assert line["request_id"] == "lb-7f3a:2"
    assert line["level"] == "WARNING" and line["logger"] == "django.request"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", line["time"])
    assert "Not Found" in line["message"] and line["status_code"] == 404
    assert "0x5290" not in json.dumps(line)  # the query string (a search for a payer) is not logged


@pytest.mark.parametrize(
    "hostile", ["a\nb", "x" * 10_000, "evil\r\nSet-Cookie: a=b", '"},{"level":"CRITICAL', "", " spaced "]
)
def test_a_hostile_request_id_is_replaced_not_echoed(client, json_lines, hostile):
    response = client.get("/no/such/thing", HTTP_X_REQUEST_ID=hostile)
    made = response["X-Request-ID"]
    assert re.fullmatch(r"req_[0-9a-f]{24}", made)
    (line,) = json_lines()  # one record, one line
    assert line["request_id"] == made


def test_each_request_has_its_own_id_and_nothing_stays_after_it(client, json_lines):
    first = client.get("/no/such/thing")["X-Request-ID"]
    second = client.get("/no/such/thing")["X-Request-ID"]
    assert first != second
    logging.getLogger("tests.observability").warning("between requests")
    assert [line.get("request_id") for line in json_lines()] == [first, second, None]


def test_an_api_requests_lines_name_its_organization(client, organization, json_lines):
    _, raw = make_api_key(organization, permissions=["read"])
    response = client.get("/api/v1/payment-links/plink_missing", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 404
    lines = json_lines()
    assert lines and lines[-1]["organization_id"] == organization.id
    assert raw not in json.dumps(lines)
