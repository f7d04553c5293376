"""Sign-in to the admin: wrong passwords are limited per address and per account, and the right password
from an address that never guessed wrong is never refused."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

URL = "/admin/login/?next=/admin/"


@pytest.fixture
def owner(django_user_model, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast: the limit is tested
    return django_user_model.objects.create_superuser("owner", "owner@example.com", "right-Password-1")


def sign_in(password: str, address: str, username: str = "owner"):
    return Client().post(URL, {"username": username, "password": password}, REMOTE_ADDR=address)


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
