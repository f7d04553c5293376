"""The second factor cannot be replaced with the password alone; recovery codes stand in for a lost phone;
replacing the authenticator needs the current one (or a recovery code); staff can reset it."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import AuditEvent
from dashboard import auth
from dashboard.models import RecoveryCode, RecoveryCodes
from tests.dashboard.conftest import PASSWORD, code_for, make_member, signed_in
from webhooks.models import NotificationEmail

pytestmark = pytest.mark.django_db


def fresh(device: TOTPDevice) -> TOTPDevice:
    """As if the app showed a new code since the last one was used (each code is accepted once)."""
    TOTPDevice.objects.filter(pk=device.pk).update(last_t=-1, throttling_failure_timestamp=None)
    device.refresh_from_db()
    return device


def not_proven_lately(client: Client) -> None:
    """As if the session's last second factor was given long ago."""
    session = client.session
    session[auth.PROVEN_AT] = 0
    session.save()


def set_up(organization, email="owner@shop.example") -> tuple[Client, list[str]]:
    """An owner's first sign-in: password, authenticator, recovery codes (what the page showed)."""
    make_member(organization, email, "owner")
    browser = Client()
    browser.post("/dashboard/sign-in/", {"email": email, "password": PASSWORD})
    browser.get("/dashboard/two-factor/")
    device = TOTPDevice.objects.get(user__username=email, confirmed=False)
    shown = browser.get(browser.post("/dashboard/two-factor/", {"code": code_for(device)})["Location"])
    return browser, re.findall(r"<li>([a-z0-9]{5}-[a-z0-9]{5})</li>", shown.content.decode())


def test_the_password_alone_never_replaces_a_confirmed_authenticator(owner):
    """Found by probing: after the password, the set-up page offered a new key to the pending sign-in, and its
    code deleted the owner's device and signed the attacker in."""
    original = TOTPDevice.objects.get(user=owner.user, confirmed=True)
    attacker = Client()
    step = attacker.post("/dashboard/sign-in/", {"email": owner.user.email, "password": PASSWORD})
    assert step["Location"] == "/dashboard/sign-in/code/"

    offered = attacker.get("/dashboard/two-factor/")
    assert offered.status_code == 302 and offered["Location"] == "/dashboard/sign-in/code/"
    assert not TOTPDevice.objects.filter(user=owner.user, confirmed=False).exists()  # no key was offered
    own = TOTPDevice.objects.create(user=owner.user, confirmed=False, name="the attacker's")
    posted = attacker.post("/dashboard/two-factor/", {"code": code_for(own)})
    assert posted["Location"] == "/dashboard/sign-in/code/"
    assert attacker.get("/dashboard/account/")["Location"].startswith("/dashboard/sign-in/")
    assert attacker.get("/dashboard/")["Location"].startswith("/dashboard/sign-in/")

    assert list(TOTPDevice.objects.filter(user=owner.user, confirmed=True)) == [original]
    assert not AuditEvent.objects.filter(event_type__startswith="member.two_factor").exists()


def test_recovery_codes_are_given_at_set_up_kept_as_digests_and_each_signs_in_once(organization):
    _, codes = set_up(organization)
    assert len(codes) == len(set(codes)) == 10
    stored = list(RecoveryCode.objects.values_list("digest", flat=True))
    assert len(stored) == 10 and not {c.replace("-", "") for c in codes} & set(stored)
    assert all(code not in str(stored) for code in codes)

    lost_phone = Client()
    lost_phone.post("/dashboard/sign-in/", {"email": "owner@shop.example", "password": PASSWORD})
    used = lost_phone.post("/dashboard/sign-in/code/", {"code": codes[3].upper()})  # as typed off paper
    assert used["Location"] == "/dashboard/account/"
    page = lost_phone.get("/dashboard/account/").content.decode()
    assert "9 of them left" in page and 'id="recovery-left">9<' in page

    again = Client()
    again.post("/dashboard/sign-in/", {"email": "owner@shop.example", "password": PASSWORD})
    refused = again.post("/dashboard/sign-in/code/", {"code": codes[3]})
    assert refused.status_code == 400 and "recovery code was used" in refused.content.decode()
    assert again.get("/dashboard/")["Location"].startswith("/dashboard/sign-in/")
    assert AuditEvent.objects.filter(event_type="member.recovery_code_used").count() == 1


def test_replacing_the_authenticator_needs_a_session_and_the_current_code(owner):
    old = TOTPDevice.objects.get(user=owner.user, confirmed=True)
    browser, other = signed_in(owner), signed_in(owner)
    not_proven_lately(browser)
    page = browser.get("/dashboard/account/")
    assert page.status_code == 200 and 'name="current"' in page.content.decode()
    new = TOTPDevice.objects.get(user=owner.user, confirmed=False)

    without = browser.post("/dashboard/account/", {"code": code_for(new)})
    assert without.status_code == 400 and "current authenticator" in without.content.decode()
    wrong = browser.post("/dashboard/account/", {"current": "000000", "code": code_for(new)})
    assert wrong.status_code == 400 and "not the current one" in wrong.content.decode()
    assert TOTPDevice.objects.filter(user=owner.user, confirmed=True).get() == old  # nothing changed

    fresh(old)
    done = browser.post("/dashboard/account/", {"current": code_for(old), "code": code_for(new)})
    assert done.status_code == 302 and done["Location"] == "/dashboard/account/"
    assert list(TOTPDevice.objects.filter(user=owner.user)) == [TOTPDevice.objects.get(pk=new.pk)]
    assert TOTPDevice.objects.get(pk=new.pk).confirmed
    assert browser.get("/dashboard/").status_code == 200  # this session goes on, verified by the new one
    assert other.get("/dashboard/")["Location"].startswith("/dashboard/sign-in/")  # the others ended
    assert AuditEvent.objects.filter(
        event_type="member.two_factor_replaced", actor=f"member:{owner.id}"
    ).exists()
    told = NotificationEmail.objects.get(event_type="member.security")
    assert told.to_address == owner.user.email and "authenticator replaced" in told.body

    # The old authenticator signs no one in any more; the new one does.
    later = Client()
    later.post("/dashboard/sign-in/", {"email": owner.user.email, "password": PASSWORD})
    assert later.post("/dashboard/sign-in/code/", {"code": code_for(old)}).status_code == 400
    assert later.post("/dashboard/sign-in/code/", {"code": code_for(fresh(new))}).status_code == 302


def test_a_recovery_code_sign_in_lets_the_member_set_up_a_new_phone_at_once(organization):
    _, codes = set_up(organization)
    lost_phone = Client()
    lost_phone.post("/dashboard/sign-in/", {"email": "owner@shop.example", "password": PASSWORD})
    lost_phone.post("/dashboard/sign-in/code/", {"code": codes[0]})
    page = lost_phone.get("/dashboard/account/").content.decode()
    assert 'name="current"' not in page  # a second factor was given a moment ago
    new = TOTPDevice.objects.get(user__username="owner@shop.example", confirmed=False)
    assert (
        lost_phone.post("/dashboard/account/", {"code": code_for(new)})["Location"] == "/dashboard/account/"
    )
    assert TOTPDevice.objects.filter(user__username="owner@shop.example", confirmed=True).get().pk == new.pk
    assert RecoveryCodes.objects.get().remaining() == 9  # the codes stay; the member may make new ones


def test_new_recovery_codes_need_a_second_factor_and_replace_the_old_ones(organization):
    browser, codes = set_up(organization)
    not_proven_lately(browser)
    refused = browser.post("/dashboard/account/recovery-codes/new", {"current": ""})
    assert refused["Location"] == "/dashboard/account/"
    assert "current authenticator" in browser.get("/dashboard/account/").content.decode()
    assert RecoveryCodes.objects.get().remaining() == 10

    made = browser.post("/dashboard/account/recovery-codes/new", {"current": codes[9]})
    assert made["Location"] == "/dashboard/account/recovery-codes/"
    shown = re.findall(r"<li>([a-z0-9]{5}-[a-z0-9]{5})</li>", browser.get(made["Location"]).content.decode())
    assert len(shown) == 10 and not set(shown) & set(codes)
    assert (
        browser.get("/dashboard/account/recovery-codes/")["Location"] == "/dashboard/account/"
    )  # shown once
    device = RecoveryCodes.objects.get()
    assert not device.verify_token(codes[0]) and device.verify_token(shown[0])


def test_a_viewer_without_an_authenticator_is_sent_to_set_one_up_from_the_account_page(viewer):
    browser = signed_in(viewer)
    assert browser.get("/dashboard/account/")["Location"] == "/dashboard/two-factor/"
