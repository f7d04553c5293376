"""Members sign in with email, password and, where due, a TOTP code; failures are limited per account."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import AuditEvent
from dashboard.models import Invitation, Member, RecoveryCodes
from tests.dashboard.conftest import PASSWORD, code_for, make_member, signed_in

pytestmark = pytest.mark.django_db


def test_create_member_reads_a_password_or_prints_a_single_use_link(organization, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("123\n"))
    with pytest.raises(CommandError, match="too short"):
        call_command("create_member", org="acme", email="a@shop.example", role="admin", password_stdin=True)
    assert not get_user_model().objects.exists() and not Member.objects.exists()

    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    out = io.StringIO()
    call_command(
        "create_member", org="acme", email="A@Shop.Example", role="admin", password_stdin=True, stdout=out
    )
    assert Member.objects.get().user.username == "a@shop.example"

    out = io.StringIO()
    call_command("create_member", org="acme", email="dev@shop.example", role="developer", stdout=out)
    link = out.getvalue().strip().splitlines()[-1]
    path = (
        link.split("127.0.0.1:8000", 1)[-1]
        if "127.0.0.1:8000" in link
        else "/dashboard/" + link.split("/dashboard/", 1)[1]
    )
    token = path.rstrip("/").rsplit("/", 1)[1]
    assert Invitation.objects.get().token_digest != token  # only a digest is kept
    payer = Client()
    assert "Join Acme" in payer.get(path).content.decode()
    weak = payer.post(path, {"password": "password", "password_again": "password"})
    assert weak.status_code == 400 and "too common" in weak.content.decode()
    assert Member.objects.count() == 1  # nothing written, and the link still works
    joined = payer.post(path, {"password": PASSWORD, "password_again": PASSWORD})
    assert joined.status_code == 302 and joined["Location"] == "/dashboard/"
    assert payer.get("/dashboard/").status_code == 200
    assert Client().get(path).status_code == 410  # used once
    with pytest.raises(CommandError, match="already has an account"):
        call_command("create_member", org="acme", email="dev@shop.example", role="viewer")


def test_a_wrong_email_and_a_wrong_password_answer_alike(viewer):
    unknown = Client().post("/dashboard/sign-in/", {"email": "nobody@shop.example", "password": PASSWORD})
    wrong = Client().post("/dashboard/sign-in/", {"email": viewer.user.email, "password": "not it at all"})
    assert unknown.status_code == wrong.status_code == 400
    assert "That email and password do not match a member." in unknown.content.decode()

    def page(response, email):  # the page without what differs per request (nonce, CSRF token) or was typed
        text = response.content.decode().replace(email, "EMAIL")
        return re.sub(r'(nonce|value)="[^"]*"', "", text)

    assert page(unknown, "nobody@shop.example") == page(wrong, viewer.user.email)


def test_an_owner_sets_up_two_factor_before_any_page_then_signs_in_with_a_code(organization):
    owner = make_member(organization, "owner@shop.example", "owner")
    browser = Client()
    first = browser.post("/dashboard/sign-in/", {"email": "owner@shop.example", "password": PASSWORD})
    assert first["Location"] == "/dashboard/two-factor/"
    assert browser.get("/dashboard/").status_code == 302  # no page before the authenticator
    setup = browser.get("/dashboard/two-factor/").content.decode()
    assert "<svg" in setup and 'id="totp-key"' in setup
    device = TOTPDevice.objects.get(user=owner.user, confirmed=False)
    assert browser.post("/dashboard/two-factor/", {"code": "000000"}).status_code == 400
    device.refresh_from_db()
    assert device.throttling_failure_count == 1  # django-otp slows guesses down per device too
    TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_timestamp=None)  # its second has passed
    done = browser.post("/dashboard/two-factor/", {"code": code_for(device)})
    assert done["Location"] == "/dashboard/account/recovery-codes/"
    codes = browser.get(done["Location"]).content.decode()
    assert codes.count("<li>") == 10 and 'href="/dashboard/"' in codes  # then on to where they were going
    assert browser.get("/dashboard/").status_code == 200

    again = Client()
    step = again.post("/dashboard/sign-in/", {"email": "owner@shop.example", "password": PASSWORD})
    assert step["Location"] == "/dashboard/sign-in/code/"
    assert again.get("/dashboard/").status_code == 302
    wrong = again.post("/dashboard/sign-in/code/", {"code": "123456"})
    assert wrong.status_code == 400 and "not the current one" in wrong.content.decode()
    # The code above was used once already, and the wrong one started the device's delay: as a minute later.
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1, throttling_failure_timestamp=None)
    device.refresh_from_db()
    assert again.post("/dashboard/sign-in/code/", {"code": code_for(device)}).status_code == 302
    assert again.get("/dashboard/").status_code == 200
    # The audit log has what the owner did to their account, and nothing of the refused attempts.
    events = list(
        AuditEvent.objects.filter(actor=f"member:{owner.id}")
        .order_by("created_at")
        .values_list("event_type", flat=True)
    )
    assert events == ["member.two_factor_enabled", "member.signed_in", "member.signed_in"]
    assert RecoveryCodes.objects.get(user=owner.user).remaining() == 10


def test_sign_out_everywhere_ends_every_session(owner):
    laptop, phone = signed_in(owner), signed_in(owner)
    assert laptop.get("/dashboard/").status_code == phone.get("/dashboard/").status_code == 200
    assert phone.post("/dashboard/sign-out/everywhere/").status_code == 302
    assert laptop.get("/dashboard/")["Location"].startswith("/dashboard/sign-in/")
    assert signed_in(owner).get("/dashboard/").status_code == 200
    assert (
        AuditEvent.objects.filter(
            event_type="member.signed_out_everywhere", actor=f"member:{owner.id}"
        ).count()
        == 1
    )


def test_the_session_cookie_and_pages_are_locked_down(viewer):
    browser = signed_in(viewer)
    page = browser.get("/dashboard/")
    assert page["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in page["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in page["Content-Security-Policy"]
    cookie = browser.cookies["sessionid"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    csrf = Client(enforce_csrf_checks=True)
    assert csrf.post("/dashboard/sign-in/", {"email": "x@y.z", "password": "p"}).status_code == 403


def test_a_password_reset_says_the_same_for_any_email_and_its_link_works_once(viewer, mailoutbox):
    import re

    before = signed_in(viewer)  # a session from before the reset
    browser = Client()
    for email in ("nobody@shop.example", viewer.user.email):
        sent = browser.post("/dashboard/password-reset/", {"email": email})
        assert sent.status_code == 302 and sent["Location"] == "/dashboard/password-reset/sent/"
    assert len(mailoutbox) == 1 and mailoutbox[0].to == [viewer.user.email]
    link = re.search(r"http://\S+(/dashboard/password-reset/\S+/)", mailoutbox[0].body).group(1)
    form = browser.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    new = "another long passphrase 7"
    done = browser.post(form.redirect_chain[-1][0], {"new_password1": new, "new_password2": new})
    assert done.status_code == 302
    assert (
        Client().post("/dashboard/sign-in/", {"email": viewer.user.email, "password": new}).status_code == 302
    )
    assert "no longer works" in browser.get(link, follow=True).content.decode()
    assert before.get("/dashboard/")["Location"].startswith("/dashboard/sign-in/")  # it ended with the reset
    assert AuditEvent.objects.filter(event_type="member.password_reset", actor=f"member:{viewer.id}").exists()


def test_a_member_without_an_authenticator_may_turn_it_on(organization):
    member = make_member(organization, "dev@shop.example", "developer")
    browser = signed_in(member)
    assert "Turn on two-factor sign-in" in browser.get("/dashboard/").content.decode()
    browser.get("/dashboard/two-factor/")
    device = TOTPDevice.objects.get(user=member.user, confirmed=False)
    done = browser.post("/dashboard/two-factor/", {"code": code_for(device)})
    assert done["Location"] == "/dashboard/account/recovery-codes/"
    assert "Turn on two-factor sign-in" not in browser.get("/dashboard/").content.decode()
    again = Client()
    assert again.post("/dashboard/sign-in/", {"email": "dev@shop.example", "password": PASSWORD})[
        "Location"
    ] == ("/dashboard/sign-in/code/")


@pytest.mark.parametrize("email", ["owner@shop.example\r\nBcc: x@evil.example", "not-an-address"])
def test_create_member_refuses_what_is_not_one_email_address(organization, email):
    with pytest.raises(CommandError, match="is not an email address"):
        call_command("create_member", org="acme", email=email, role="owner", stdout=io.StringIO())
    assert not Invitation.objects.exists() and not get_user_model().objects.exists()


def test_create_member_on_a_new_install_makes_the_organization(db):
    out = io.StringIO()
    call_command("create_member", org="newshop", email="owner@newshop.example", role="owner", stdout=out)
    assert "Created organization newshop." in out.getvalue() and "/dashboard/invitations/" in out.getvalue()
    assert Invitation.objects.get().organization.slug == "newshop"
