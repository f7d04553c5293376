from chains.evm import create2_address, deposit_address_for, is_address, keccak256, to_checksum_address


def test_keccak256_is_keccak_not_sha3():
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"


def test_eip55_checksum_vectors():
    for address in (
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
        "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    ):
        assert to_checksum_address(address.lower()) == address


def test_create2_matches_eip1014_examples():
    zero = "0x" + "00" * 20
    assert (
        create2_address(factory=zero, salt=bytes(32), init_code_hash=keccak256(b"\x00"))
        == "0x4D1A2e2bB4F88F0250f26Ffff098B0b30B26BF38"
    )
    assert (
        create2_address(
            factory="0xdeadbeef00000000000000000000000000000000",
            salt=bytes(32),
            init_code_hash=keccak256(b"\x00"),
        )
        == "0xB928f69Bb1D91Cd65274e3c79d8986362984fDA3"
    )


def test_deposit_addresses_are_deterministic_and_distinct():
    factory = "0x" + "12" * 20
    first = deposit_address_for(factory=factory, kind="order", identifier="a")
    assert first == deposit_address_for(factory=factory, kind="order", identifier="a")
    assert first != deposit_address_for(factory=factory, kind="order", identifier="b")
    assert first != deposit_address_for(factory=factory, kind="quick_payment", identifier="a")
    assert first != deposit_address_for(factory="0x" + "34" * 20, kind="order", identifier="a")
    assert is_address(first)


def test_is_address():
    assert is_address("0x" + "aB" * 20)
    assert not is_address("0x" + "aB" * 19)
    assert not is_address(None)
    assert not is_address("0x" + "aB" * 20 + "\n")
