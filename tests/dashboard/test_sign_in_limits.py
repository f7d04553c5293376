"""Failed sign-ins: a ceiling per client address across accounts, a delay per account that grows, and a
browser the member signed in from before is never held back by what others sent."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.throttle import DEVICE_COOKIE
from platform_api import ratelimit
from tests.dashboard.conftest import PASSWORD, make_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch):
    """The limits' clock, moved by the test."""
    now = [1_800_000_000.0]
    monkeypatch.setattr(ratelimit, "_clock", lambda: now[0])
    return now


def sign_in(client: Client, email: str, password: str):
    return client.post("/dashboard/sign-in/", {"email": email, "password": password})


def test_forty_wrong_passwords_for_forty_emails_from_one_address_stop_at_the_ceiling(
    organization, settings, clock
):
    """Found by probing: 40 wrong passwords for 40 different emails from one IP were all answered 400."""
    member = make_member(organization, "known@shop.example", "viewer")
    known = Client(REMOTE_ADDR="198.51.100.7")
    assert sign_in(known, member.user.email, PASSWORD).status_code == 302  # signed in here before
    attacker = Client(REMOTE_ADDR="198.51.100.7")  # the same office address, another browser
    answers = [sign_in(attacker, f"guess{n}@shop.example", "nope").status_code for n in range(40)]
    ceiling = settings.DASHBOARD_SIGNIN_FAILURES_PER_IP
    assert ceiling == 30 and answers == [400] * ceiling + [429] * (40 - ceiling)
    refused = sign_in(Client(REMOTE_ADDR="198.51.100.7"), member.user.email, PASSWORD)
    assert refused.status_code == 429 and "from your network" in refused.content.decode()

    # The member's own browser at that address, and anyone elsewhere, are not held back.
    assert sign_in(known, member.user.email, PASSWORD).status_code == 302
    assert sign_in(Client(REMOTE_ADDR="203.0.113.9"), member.user.email, PASSWORD).status_code == 302
    clock[0] += settings.DASHBOARD_SIGNIN_WINDOW_SECONDS
    assert sign_in(Client(REMOTE_ADDR="198.51.100.7"), member.user.email, PASSWORD).status_code == 302


def test_guessing_one_account_waits_longer_each_time_and_never_locks_out_its_member(
    organization, settings, clock
):
    """Found by probing: 5 wrong passwords for a known email locked its member out from everywhere."""
    member = make_member(organization, "victim@shop.example", "viewer")
    laptop = Client(REMOTE_ADDR="203.0.113.9")
    assert sign_in(laptop, member.user.email, PASSWORD).status_code == 302
    assert DEVICE_COOKIE in laptop.cookies
    laptop.post("/dashboard/sign-out/")

    free = settings.DASHBOARD_SIGNIN_FREE_FAILURES
    waits = []
    for n in range(free + 5):  # each guess from another address, as a botnet would
        guess = sign_in(Client(REMOTE_ADDR=f"198.51.100.{n + 1}"), member.user.email, "guess")
        if n < free:
            assert guess.status_code == 400
            continue
        assert guess.status_code == 429  # at once: it must wait
        waits.append(int(guess.content.decode().split("Try again in ")[1].split(" s")[0]))
        clock[0] += waits[-1]  # the attacker waits, and guesses wrong again
        assert sign_in(Client(REMOTE_ADDR="198.51.100.99"), member.user.email, "guess").status_code == 400
    assert waits == [1, 2, 4, 8, 16]  # twice as long each time

    # The member's own browser signs in at once, guesses or not; a new browser waits its turn, then signs in.
    assert sign_in(laptop, member.user.email, PASSWORD).status_code == 302
    phone = Client(REMOTE_ADDR="203.0.113.10")
    assert sign_in(phone, member.user.email, PASSWORD).status_code == 429
    clock[0] += 32
    assert sign_in(phone, member.user.email, PASSWORD).status_code == 302


def test_a_known_browser_that_keeps_failing_stops_being_known(organization, settings, clock):
    member = make_member(organization, "forgetful@shop.example", "viewer")
    laptop = Client()
    sign_in(laptop, member.user.email, PASSWORD)
    laptop.post("/dashboard/sign-out/")
    for _ in range(settings.DASHBOARD_SIGNIN_FAILURES_PER_DEVICE):
        assert sign_in(laptop, member.user.email, "wrong").status_code == 400
    # Its failures counted for the browser only; now it is as any browser: the account's free tries remain.
    for _ in range(settings.DASHBOARD_SIGNIN_FREE_FAILURES):
        assert sign_in(laptop, member.user.email, "wrong").status_code == 400
    assert sign_in(laptop, member.user.email, PASSWORD).status_code == 429


def test_a_forged_device_cookie_counts_for_nothing(organization, settings, clock):
    member = make_member(organization, "victim@shop.example", "viewer")
    forger = Client()
    forger.cookies[DEVICE_COOKIE] = "eyJmYWtlIjoxfQ:forged:signature"
    for _ in range(settings.DASHBOARD_SIGNIN_FREE_FAILURES):
        assert sign_in(forger, member.user.email, "guess").status_code == 400
    assert sign_in(forger, member.user.email, "guess").status_code == 429


def test_password_reset_emails_are_limited_per_address_and_per_client_with_the_same_answer(
    organization, mailoutbox, settings, clock
):
    """Found by probing: 16 reset emails in seconds for one address."""
    member = make_member(organization, "victim@shop.example", "viewer")
    answers = [
        Client(REMOTE_ADDR=f"198.51.100.{n + 1}").post(
            "/dashboard/password-reset/", {"email": member.user.email}
        )
        for n in range(16)
    ]
    assert {(a.status_code, a["Location"]) for a in answers} == {(302, "/dashboard/password-reset/sent/")}
    assert len(mailoutbox) == settings.DASHBOARD_PASSWORD_RESETS_PER_EMAIL == 3

    make_member(organization, "other@shop.example", "viewer")
    one_client = Client(REMOTE_ADDR="203.0.113.50")
    for n in range(settings.DASHBOARD_PASSWORD_RESETS_PER_IP):
        one_client.post("/dashboard/password-reset/", {"email": f"nobody{n}@shop.example"})
    same = one_client.post("/dashboard/password-reset/", {"email": "other@shop.example"})
    assert same["Location"] == "/dashboard/password-reset/sent/" and len(mailoutbox) == 3
    clock[0] += 3600
    Client(REMOTE_ADDR="203.0.113.50").post("/dashboard/password-reset/", {"email": "other@shop.example"})
    assert len(mailoutbox) == 4 and mailoutbox[-1].to == ["other@shop.example"]
