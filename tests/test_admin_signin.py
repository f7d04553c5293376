"""Sign-in to the admin: a password and a second factor; wrong passwords are limited per address and per
account, and the right password from an address that never guessed wrong is never refused."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit.models import AuditEvent
from dashboard.models import RecoveryCodes
from tests.conftest import staff_code

pytestmark = pytest.mark.django_db

URL = "/admin/login/?next=/admin/"


@pytest.fixture
def owner(django_user_model, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast: the limit is tested
    user = django_user_model.objects.create_superuser("owner", "owner@example.com", "right-Password-1")
    TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)
    return user


def sign_in(password: str, address: str, username: str = "owner", code: str = ""):
    if password == "right-Password-1" and not code and username == "owner":
        from django.contrib.auth import get_user_model

        code = staff_code(get_user_model().objects.get(username="owner"))
    return Client().post(
        URL, {"username": username, "password": password, "otp_token": code}, REMOTE_ADDR=address
    )


def test_a_hundred_wrong_passwords_from_one_address_are_stopped_and_the_owner_signs_in_from_elsewhere(
    owner, settings
):
    """Found black-box: 100 wrong passwords in 25 s were all answered 200, then the right one logged in."""
    answers = [sign_in(f"guess-{n}", "198.51.100.7").status_code for n in range(100)]

    assert answers[:9] == [200] * 9  # the form again, "enter a correct username and password"
    assert set(answers[10:]) == {429}
    assert sign_in("right-Password-1", "198.51.100.7").status_code == 429  # this address waits
    assert sign_in("right-Password-1", "198.51.100.7", username="someone-else").status_code == 429
    signed_in = sign_in("right-Password-1", "203.0.113.9")  # the owner, from elsewhere
    assert signed_in.status_code == 302 and signed_in["Location"] == "/admin/"


def test_guesses_spread_over_many_addresses_lock_those_addresses_out_of_the_account(owner, settings):
    limit = settings.ADMIN_SIGNIN_FAILURES_PER_ACCOUNT
    answers = [sign_in(f"guess-{n}", f"198.51.100.{n + 1}").status_code for n in range(limit)]

    assert answers == [200] * (limit - 1) + [429]  # one guess per address, far under 10; the account's 20th
    # Every guessing address is refused for this account now, even with the right password ...
    assert sign_in("right-Password-1", "198.51.100.3").status_code == 429
    # ... while an address that never guessed wrong signs in.
    assert sign_in("right-Password-1", "203.0.113.9").status_code == 302


def test_a_right_password_resets_that_address_count(owner):
    for n in range(5):
        sign_in(f"guess-{n}", "198.51.100.7")
    assert sign_in("right-Password-1", "198.51.100.7").status_code == 302
    assert [sign_in(f"again-{n}", "198.51.100.7").status_code for n in range(9)] == [200] * 9


def test_the_password_alone_does_not_open_the_admin(owner):
    """Found by probing: staff, who can refund, signed in with a password only."""
    browser = Client()
    refused = browser.post(URL, {"username": "owner", "password": "right-Password-1"})
    assert refused.status_code == 200 and "Enter the 6-digit code" in refused.content.decode()
    assert browser.get("/admin/")["Location"].startswith("/admin/login/")
    wrong = browser.post(URL, {"username": "owner", "password": "right-Password-1", "otp_token": "000000"})
    assert "not the current one" in wrong.content.decode()
    assert "each code is accepted once" in wrong.content.decode()  # a code used at set-up is refused: why
    assert browser.get("/admin/")["Location"].startswith("/admin/login/")

    done = browser.post(
        URL, {"username": "owner", "password": "right-Password-1", "otp_token": staff_code(owner)}
    )
    assert done.status_code == 302 and browser.get("/admin/").status_code == 200
    page = Client().get("/admin/login/").content.decode()
    assert 'id="id_otp_token"' in page and 'autocomplete="one-time-code"' in page


def test_staff_without_an_authenticator_are_told_how_to_set_one_up(django_user_model):
    django_user_model.objects.create_superuser("new", "new@example.com", "right-Password-1")
    page = Client().post(URL, {"username": "new", "password": "right-Password-1"}).content.decode()
    assert "manage.py staff_two_factor" in page


def test_staff_two_factor_sets_up_an_authenticator_from_the_code_it_was_shown(django_user_model, monkeypatch):
    user = django_user_model.objects.create_superuser("ops", "ops@example.com", "right-Password-1")
    monkeypatch.setattr("sys.stdin", io.StringIO("000000\n"))
    with pytest.raises(CommandError, match="nothing was changed"):
        call_command("staff_two_factor", "ops", stdout=io.StringIO())
    assert not TOTPDevice.objects.filter(user=user).exists()

    class Stdin(io.StringIO):  # types the code of the device the command just made, as the person would
        def readline(self, *args):
            device = TOTPDevice.objects.get(user=user, confirmed=False)
            from django_otp.oath import totp

            return f"{totp(device.bin_key):06d}\n"

    monkeypatch.setattr("sys.stdin", Stdin())
    out = io.StringIO()
    call_command("staff_two_factor", "ops", stdout=out)
    assert TOTPDevice.objects.get(user=user).confirmed and "Key: " in out.getvalue()
    codes = out.getvalue().split("shown only now):")[1].split()
    assert len(codes) == 10 and RecoveryCodes.objects.get(user=user).remaining() == 10
    with pytest.raises(CommandError, match="--replace"):
        call_command("staff_two_factor", "ops", stdout=io.StringIO())

    # A recovery code signs in once, in place of the app's code.
    browser = Client()
    assert (
        browser.post(
            URL, {"username": "ops", "password": "right-Password-1", "otp_token": codes[0]}
        ).status_code
        == 302
    )
    again = Client().post(URL, {"username": "ops", "password": "right-Password-1", "otp_token": codes[0]})
    assert again.status_code == 200


def test_staff_reset_a_members_second_factor_from_the_members_page(staff, organization):
    from tests.dashboard.conftest import make_member

    member = make_member(organization, "owner@shop.example", "owner", device=True)
    page = staff.get("/admin/dashboard/member/")
    assert page.status_code == 200 and "owner@shop.example" in page.content.decode()
    done = staff.post(
        "/admin/dashboard/member/",
        {"action": "reset_second_factor", "_selected_action": [member.pk]},
    )
    assert done.status_code == 302
    assert not TOTPDevice.objects.filter(user=member.user).exists()
    member.refresh_from_db()
    assert member.session_generation == 1  # signed out everywhere
    event = AuditEvent.objects.get(event_type="member.two_factor_reset")
    assert event.actor == "staff:admin" and event.resource_id == member.id
