"""Which network addresses the service may call on a merchant's behalf (SSRF protection).

Only globally reachable unicast addresses pass. Every block of the IANA IPv4 and
IPv6 special-purpose address registries is refused, as are multicast and, for
IPv6, everything outside 2000::/3. IPv4 embedded in IPv6 is unwrapped first
(IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo), so a wrapped private
address is reported as what it is; the wrapping prefixes are themselves
special-purpose, so only IPv4-mapped addresses of public IPv4 addresses pass.
Loopback passes only when the caller allows it (development).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IANA IPv4 Special-Purpose Address Registry, plus multicast and limited broadcast.
IPV4_SPECIAL = [
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private use
        "100.64.0.0/10",  # shared address space (CGNAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link local (cloud metadata services live here)
        "172.16.0.0/12",  # private use
        "192.0.0.0/24",  # IETF protocol assignments (192.0.0.8 dummy, .9 PCP anycast, .10 TURN, .170 NAT64 discovery)
        "192.0.2.0/24",  # documentation (TEST-NET-1)
        "192.31.196.0/24",  # AS112-v4
        "192.52.193.0/24",  # AMT
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",  # private use
        "192.175.48.0/24",  # direct delegation AS112
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation (TEST-NET-2)
        "203.0.113.0/24",  # documentation (TEST-NET-3)
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and 255.255.255.255 limited broadcast
    )
]

# IANA IPv6 Special-Purpose Address Registry, plus link-local, multicast and 2000::/3's complement.
IPV6_SPECIAL = [
    ipaddress.IPv6Network(n)
    for n in (
        "::/128",  # unspecified
        "::1/128",  # loopback
        "::ffff:0:0/96",  # IPv4-mapped
        "::/96",  # IPv4-compatible (deprecated)
        "64:ff9b::/96",  # NAT64 well-known prefix
        "64:ff9b:1::/48",  # NAT64 local use
        "100::/64",  # discard only
        "100:0:0:1::/64",  # dummy prefix
        "2001::/23",  # IETF protocol assignments (Teredo 2001::/32, benchmarking, ORCHID, AMT, ...)
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4
        "2620:4f:8000::/48",  # AS112-v6
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing SIDs
        "fc00::/7",  # unique local
        "fe80::/10",  # link local
        "ff00::/8",  # multicast
    )
]
IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
NAT64_PREFIXES = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
TEREDO = ipaddress.IPv6Network("2001::/32")
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""


def parse_address(text: str) -> IPAddress:
    """An address as a socket reports it (an IPv6 zone suffix is dropped); ValueError if it is none."""
    return ipaddress.ip_address(text.split("%", 1)[0].strip("[]"))


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address that an IPv6 address carries, for the forms that carry one."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in TEREDO:
        return address.teredo[1] if address.teredo else None  # the client's address, de-obfuscated
    if address.sixtofour is not None:
        return address.sixtofour
    packed = int(address)
    if any(address in prefix for prefix in NAT64_PREFIXES):
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    if address in IPV4_COMPATIBLE and packed > 1:
        return ipaddress.IPv4Address(packed & 0xFFFFFFFF)
    return None


def _ipv4_verdict(address: ipaddress.IPv4Address, *, allow_loopback: bool) -> Verdict:
    if address.is_loopback:
        return Verdict(allow_loopback, "" if allow_loopback else "loopback")
    for network in IPV4_SPECIAL:
        if address in network:
            return Verdict(False, f"special-purpose range {network}")
    return Verdict(True)


def check_address(address: IPAddress, *, allow_loopback: bool = False) -> Verdict:
    """Whether the service may open a connection to `address`, and why not."""
    if isinstance(address, ipaddress.IPv4Address):
        return _ipv4_verdict(address, allow_loopback=allow_loopback)
    if address == ipaddress.IPv6Address("::1"):
        return Verdict(allow_loopback, "" if allow_loopback else "loopback")
    inner = embedded_ipv4(address)
    if address.ipv4_mapped is not None:
        return _ipv4_verdict(address.ipv4_mapped, allow_loopback=allow_loopback)
    if inner is not None:
        wrapped = _ipv4_verdict(inner, allow_loopback=False)
        detail = f"embeds {inner}" + (f", {wrapped.reason}" if not wrapped.allowed else "")
        return Verdict(False, f"IPv4-embedding IPv6 address ({detail})")
    if address not in IPV6_GLOBAL_UNICAST:
        return Verdict(False, "outside global unicast 2000::/3")
    for network in IPV6_SPECIAL:
        if address in network:
            return Verdict(False, f"special-purpose range {network}")
    return Verdict(True)
