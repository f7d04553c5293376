"""The team page: an admin invites by email (through the notification outbox), the invited person joins
with the link and signs in as a viewer who can change nothing; owners are protected."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.models import Invitation, Member
from tests.dashboard.conftest import PASSWORD, make_member, signed_in
from tests.factories import OrganizationFactory
from webhooks import notifications
from webhooks.models import NotificationEmail

pytestmark = pytest.mark.django_db


def _token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)


def test_an_invited_viewer_joins_by_email_and_can_change_nothing(organization, mailoutbox):
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    form = {
        "form_token": _token(admin.get("/dashboard/team/").content.decode()),
        "email": "new@shop.example",
        "role": "viewer",
    }
    assert (
        "Invitation sent to new@shop.example"
        in admin.post("/dashboard/team/", form, follow=True).content.decode()
    )
    admin.post("/dashboard/team/", form)  # sent twice: one invitation
    assert Invitation.objects.count() == 1
    from audit.models import AuditEvent

    assert AuditEvent.objects.get(event_type="invitation.created").actor.startswith("member:mem_")
    email = NotificationEmail.objects.get(event_type="member.invited")
    assert notifications.send(email.id) == "sent"
    link = re.search(r"https?://\S+/dashboard/invitations/\S+/", mailoutbox[0].body).group(0)
    path = "/dashboard/" + link.split("/dashboard/", 1)[1]

    newcomer = Client()
    assert newcomer.post(path, {"password": PASSWORD, "password_again": PASSWORD}).status_code == 302
    viewer = Member.objects.get(user__username="new@shop.example")
    assert viewer.role == "viewer"
    joined = AuditEvent.objects.filter(actor=f"member:{viewer.id}").order_by("created_at")
    assert list(joined.values_list("event_type", flat=True)) == ["member.joined", "member.signed_in"]
    for url, body in (
        ("/dashboard/team/", {"email": "x@shop.example", "role": "admin"}),
        (f"/dashboard/team/{viewer.id}/remove", {}),
        ("/dashboard/links/new/", {"name": "x"}),
        ("/dashboard/keys/", {"name": "x", "permissions": ["read"]}),
    ):
        assert newcomer.post(url, body).status_code == 403, url
    assert Invitation.objects.count() == 1 and Member.objects.count() == 2
    page = newcomer.get("/dashboard/team/").content.decode()
    assert "admin@shop.example" in page and "Invite someone" not in page


def test_an_admin_cannot_remove_an_owner_and_the_last_owner_stays(organization):
    owner = make_member(organization, "owner@shop.example", "owner", device=True)
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    admin.post(f"/dashboard/team/{owner.id}/remove")
    assert Member.objects.filter(pk=owner.pk).exists()
    as_owner = signed_in(owner)
    as_owner.post(f"/dashboard/team/{owner.id}/remove")
    assert Member.objects.filter(pk=owner.pk).exists()  # the last owner
    removed = make_member(organization, "gone@shop.example", "developer")
    gone = signed_in(removed)
    as_owner.post(f"/dashboard/team/{removed.id}/remove")
    assert not Member.objects.filter(pk=removed.pk).exists()
    assert gone.get("/dashboard/").status_code == 302  # signed out at once
    assert (
        Client().post("/dashboard/sign-in/", {"email": "gone@shop.example", "password": PASSWORD}).status_code
        == 400
    )


def test_only_an_owner_invites_an_owner_and_other_teams_are_out_of_reach(organization):
    admin = signed_in(make_member(organization, "admin@shop.example", "admin"))
    token = _token(admin.get("/dashboard/team/").content.decode())
    refused = admin.post(
        "/dashboard/team/", {"form_token": token, "email": "boss@shop.example", "role": "owner"}
    )
    assert refused.status_code == 400 and 'id="role-error"' in refused.content.decode()
    theirs = make_member(OrganizationFactory(slug="other"), "them@other.example", "viewer")
    assert admin.post(f"/dashboard/team/{theirs.id}/remove").status_code == 404
    assert "them@other.example" not in admin.get("/dashboard/team/").content.decode()
