from __future__ import annotations

import pytest
from django.test import Client
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from dashboard.members import member_create

PASSWORD = "correct horse battery staple 42"


def code_for(device: TOTPDevice) -> str:
    """The code an authenticator app shows now."""
    return f"{totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits, drift=device.drift):0{device.digits}d}"


def make_member(organization, email="viewer@shop.example", role="viewer", *, device=False):
    member = member_create(organization=organization, email=email, role=role, password=PASSWORD)
    if device:
        TOTPDevice.objects.create(user=member.user, name="phone", confirmed=True)
    return member


def signed_in(member) -> Client:
    """A browser signed in as `member` through the sign-in pages (the code too, where one is due)."""
    client = Client()
    response = client.post("/dashboard/sign-in/", {"email": member.user.email, "password": PASSWORD})
    assert response.status_code == 302, response.content.decode()[:500]
    if response["Location"].startswith("/dashboard/sign-in/code/"):
        TOTPDevice.objects.filter(user=member.user).update(last_t=-1)  # as if a new code had come up since
        device = TOTPDevice.objects.get(user=member.user, confirmed=True)
        response = client.post("/dashboard/sign-in/code/", {"code": code_for(device)})
        assert response.status_code == 302, response.content.decode()[:500]
    return client


@pytest.fixture
def owner(organization):
    return make_member(organization, "owner@shop.example", "owner", device=True)


@pytest.fixture
def viewer(organization):
    return make_member(organization, "viewer@shop.example", "viewer")
