"""Names declared once: webhook events (a body and a subject each), the other emails' kinds, audit names.

A misspelt name is refused where it would be written, in the writer's transaction, so nothing is half-written
under a name no filter, subscription or subject finds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction

from audit.models import AuditEvent
from config.wiring import audit_recorders
from merchant.models import Product
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.signals import record_write
from tests.factories import ProductFactory
from webhooks.kinds import EmailKind, EventType
from webhooks.models import NotificationEmail
from webhooks.notifications import SUBJECTS, compose, queue
from webhooks.payloads import CALLBACKS, event_body

# The writers of each kind of name, and the keyword (or position) the name is passed in.
WRITERS = {
    "record_write": "event_type",
    "audit_member": 2,
    "_audit": None,  # the apps' own helpers: the name is the first string-literal argument, if any
    "queue": "event_type",
    "owners_email": "event_type",
    "payer_email_queue": "kind",
    "event_body": 0,
}


def test_every_event_has_a_documented_body_and_an_email_subject():
    assert set(SUBJECTS) == set(EventType)
    assert {callback.name for callback in CALLBACKS} == set(EventType)
    subject, _ = compose(EventType.REFUND_FAILED, {})
    assert subject == "Refund failed: its amount is in your refund balance"


def test_a_body_for_an_event_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match=r"payment\.complete"):
        event_body("payment.complete", "Misspelt")  # type: ignore[arg-type]


def test_every_audit_name_is_recorded_somewhere():
    recorders = audit_recorders()
    assert [name for name, modules in recorders.items() if not modules] == []
    assert recorders[AuditName.REFUND_CREATED] == ["refunds.services"]


def _literal_names(path: Path) -> list[str]:
    """Where a writer of names is given a string literal rather than a member of its enum."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name not in WRITERS:
            continue
        where = WRITERS[name]
        values = [kw.value for kw in node.keywords if kw.arg == where] if isinstance(where, str) else []
        if isinstance(where, int) and len(node.args) > where:
            values.append(node.args[where])
        if where is None:
            values += node.args
        found += [
            f"{path.name}:{value.lineno}"
            for value in values
            if isinstance(value, ast.Constant | ast.JoinedStr)
            and (isinstance(value, ast.JoinedStr) or "." in str(value.value) or value.value == "test")
        ]
    return found


def test_no_writer_is_given_a_name_as_a_string():
    root = settings.BASE_DIR
    literal = []
    for app in ("audit", "checkout", "dashboard", "merchant", "platform_api", "refunds", "webhooks"):
        for path in sorted((root / app).rglob("*.py")):
            if "migrations" not in path.parts:
                literal += _literal_names(path)
    assert literal == []


@pytest.mark.django_db
def test_an_unknown_audit_name_rolls_the_write_back(organization):
    ctx = RequestContext(organization=organization, api_key=None, ip_address="", method="", path="")
    with pytest.raises(ValueError, match=r"product\.creatd"), transaction.atomic():
        ProductFactory(organization=organization)
        record_write(ctx=ctx, event_type="product.creatd", resource_type="product", resource_id="p")  # type: ignore[arg-type]
    assert not Product.objects.filter(organization=organization).exists()
    assert not AuditEvent.objects.exists()

    record_write(ctx=ctx, event_type=AuditName.PRODUCT_CREATED, resource_type="product", resource_id="p")
    assert AuditEvent.objects.get().event_type == "product.created"


@pytest.mark.django_db
def test_an_email_of_no_known_kind_is_refused_and_nothing_is_written(organization):
    with pytest.raises(ValueError, match=r"member\.invite"):
        queue(
            organization=organization,
            event=None,
            event_type="member.invite",  # type: ignore[arg-type]
            to="owner@shop.example",
            subject="s",
            body="b",
        )
    assert not NotificationEmail.objects.exists()
    email = queue(
        organization=organization,
        event=None,
        event_type=EmailKind.MEMBER_INVITED,
        to="owner@shop.example",
        subject="s",
        body="b",
    )
    assert email is not None and email.event_type == "member.invited"
