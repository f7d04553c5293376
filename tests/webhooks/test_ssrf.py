# ruff: noqa: S104 - the addresses below are data, never bound
"""Every special-purpose address is refused, in every spelling, when a URL is saved and before connecting."""

import socket

import pytest

from core import safehttp
from core.netguard import check_address, parse_address
from tests.webhooks.conftest import make_endpoint

# (address, why it is not public)
REFUSED = [
    ("0.0.0.0", "this network"),
    ("10.1.2.3", "private"),
    ("100.64.0.1", "CGNAT"),
    ("127.0.0.1", "loopback"),
    ("169.254.169.254", "link local, cloud metadata"),
    ("172.16.0.1", "private"),
    ("192.0.0.8", "IPv4 dummy address"),
    ("192.0.0.9", "PCP anycast"),
    ("192.0.0.170", "NAT64 discovery"),
    ("192.0.2.1", "documentation"),
    ("192.31.196.1", "AS112"),
    ("192.52.193.1", "AMT"),
    ("192.88.99.1", "6to4 relay anycast"),
    ("192.168.1.1", "private"),
    ("192.175.48.1", "AS112 delegation"),
    ("198.18.0.1", "benchmarking"),
    ("198.51.100.1", "documentation"),
    ("203.0.113.1", "documentation"),
    ("224.0.0.1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("::ffff:169.254.169.254", "IPv4-mapped metadata"),
    ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ("::a9fe:a9fe", "IPv4-compatible metadata"),
    ("::127.0.0.1", "IPv4-compatible loopback"),
    ("64:ff9b::a9fe:a9fe", "NAT64 metadata"),
    ("64:ff9b::808:808", "NAT64 of a public address: the prefix is special-purpose"),
    ("64:ff9b:1::a9fe:a9fe", "local-use NAT64"),
    ("2002:a9fe:a9fe::", "6to4 metadata"),
    ("2001:0:4136:e378:8000:63bf:56fe:5601", "Teredo, client 169.1.169.254"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("100::1", "discard only"),
    ("5f00::1", "SRv6"),
    ("fc00::1", "unique local"),
    ("fd12:3456::1", "unique local"),
    ("fe80::1", "link local"),
    ("ff02::1", "multicast"),
    ("4000::1", "outside 2000::/3"),
]
ALLOWED = ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:93.184.216.34"]


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_special_purpose_addresses_are_refused(address, why):
    assert check_address(parse_address(address)).allowed is False, why


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_pass(address):
    assert check_address(parse_address(address)).allowed is True


def _url(address: str) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"https://{host}/hook"


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_refused_when_saved_in_production(admin_client, settings, address, why):
    settings.WEBHOOK_ALLOW_LOCALHOST = False
    response = admin_client.post("/api/v1/webhooks", {"url": _url(address), "events": ["*"]}, format="json")
    assert response.status_code == 400, why
    assert response.json()["error"]["param"] == "url"


@pytest.mark.parametrize(
    "address", ["64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::", "::127.0.0.1", "192.0.0.8"]
)
def test_refused_on_update_in_production(admin_client, organization, settings, address):
    settings.WEBHOOK_ALLOW_LOCALHOST = False
    endpoint, _ = make_endpoint(organization, "https://93.184.216.34/hook")
    response = admin_client.patch(f"/api/v1/webhooks/{endpoint.id}", {"url": _url(address)}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "url"
    endpoint.refresh_from_db()
    assert endpoint.url == "https://93.184.216.34/hook"


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_a_name_that_rebinds_is_refused_before_any_connection(monkeypatch, address, why):
    """The check runs on what the name resolves to at send time, and no socket is ever opened."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sockaddr = (address, 443, 0, 0) if family == socket.AF_INET6 else (address, 443)
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda *args, **kwargs: [(family, socket.SOCK_STREAM, 6, "", sockaddr)]
    )
    opened = []
    monkeypatch.setattr(socket, "socket", lambda *args, **kwargs: opened.append(args))

    result = safehttp.post("https://rebind.example.com/hook", b"{}", {}, deadline_seconds=2)

    assert result.status is None
    assert "non-public address" in result.error, why
    assert opened == []


def test_one_private_answer_among_public_ones_refuses_the_name(monkeypatch):
    answers = [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 443)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", 443)),
    ]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: answers)
    result = safehttp.post("https://mixed.example.com/hook", b"{}", {}, deadline_seconds=2)
    assert result.status is None and "non-public" in result.error
