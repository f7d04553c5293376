"""Keys in custody: a keystore unlocked with a passphrase file, a remote signer over eth_signTransaction (a real
local stand-in), and production refusing plain keys in the environment. Each signs real transactions on anvil."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from eth_account import Account
from web3 import Web3

from chains.devnet import devnet_private_key
from chains.models import OutboxTx
from chains.outbox import outbox_send, outbox_submit
from chains.signers import SignerUnavailable, forget_unlocked_keys, sign_transaction, unlock_keystores
from tests.chains.test_outbox import new_address, until_finished

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
VAULT_KEY = devnet_private_key(0)


@pytest.fixture
def chain_a(devnets_registry, settings, monkeypatch):
    settings.OUTBOX_RESEND_AFTER_SECONDS = 0
    for variable in ("VAULT_PRIVATE_KEY", "SOLVER_PRIVATE_KEY", "DEPLOYER_PRIVATE_KEY"):
        monkeypatch.delenv(variable, raising=False)  # no plain key anywhere in this process
    forget_unlocked_keys()
    yield devnets_registry[0]
    forget_unlocked_keys()


PASSPHRASE = "correct horse battery staple"


def _keystore(tmp_path, key=VAULT_KEY, passphrase=PASSPHRASE):
    path, secret = tmp_path / "vault.json", tmp_path / "vault.passphrase"
    path.write_text(json.dumps(Account.encrypt(key, passphrase, kdf="scrypt", iterations=2**12)))
    secret.write_text(passphrase + "\n")  # as a mounted secret often ends
    return str(path), str(secret)


def _pay_once(chain_a, key="test:custody"):
    to = new_address()
    tx = outbox_submit(key=key, chain_id=31337, signer="vault", to=to, value=4321)
    outbox_send(tx.pk)
    tx = until_finished(tx)
    w3 = Web3(Web3.HTTPProvider(chain_a[0].rpc_url))
    return tx, w3.eth.get_balance(to), w3.eth.get_transaction(tx.tx_hash)["from"]


def test_the_keystore_backend_signs_with_the_key_its_passphrase_file_unlocks(
    chain_a, settings, tmp_path, caplog
):
    settings.SIGNER_BACKEND = "keystore"
    settings.SIGNER_KEYSTORES = {"vault": _keystore(tmp_path)}

    tx, received, sender = _pay_once(chain_a)

    assert (tx.status, received, sender) == ("mined", 4321, settings.VAULT_ADDRESS)
    assert "correct horse" not in caplog.text and VAULT_KEY[2:] not in caplog.text


def test_a_wrong_passphrase_or_another_key_is_refused_and_nothing_is_sent(chain_a, settings, tmp_path):
    settings.SIGNER_BACKEND = "keystore"
    path, secret = _keystore(tmp_path)
    Path(secret).write_text("wrong passphrase")
    settings.SIGNER_KEYSTORES = {"vault": (path, secret)}
    tx = outbox_submit(key="test:wrong-passphrase", chain_id=31337, signer="vault", to=new_address(), value=1)
    with pytest.raises(SignerUnavailable, match="cannot be decrypted with its passphrase") as refused:
        outbox_send(tx.pk)
    assert "wrong passphrase" not in str(refused.value)
    tx.refresh_from_db()
    assert tx.status == "queued" and not tx.raw_tx  # waits for a signer that can sign; never failed

    forget_unlocked_keys()
    settings.SIGNER_KEYSTORES = {"vault": _keystore(tmp_path, key=devnet_private_key(5))}
    with pytest.raises(SignerUnavailable, match="is not the key of vault address"):
        outbox_send(tx.pk)


def test_a_worker_unlocks_its_keystores_once_before_it_signs(chain_a, settings, tmp_path, caplog):
    """What a worker's main process does before its pool forks: afterwards a signature needs neither the files
    nor another decryption (the children inherit the key), and a keystore it cannot open only stays locked."""
    settings.SIGNER_BACKEND = "keystore"
    path, secret = _keystore(tmp_path)
    (tmp_path / "solver").mkdir()
    bad_path, bad_secret = _keystore(tmp_path / "solver", key=devnet_private_key(5))
    Path(bad_secret).write_text("wrong passphrase")
    settings.SIGNER_KEYSTORES = {
        "vault": (path, secret),
        "solver": (bad_path, bad_secret),
        "deployer": ("", ""),
    }

    assert unlock_keystores() == ["vault"]
    assert (
        "The solver signer stays locked in this worker" in caplog.text
        and "wrong passphrase" not in caplog.text
    )
    Path(path).unlink()
    Path(secret).unlink()

    tx, received, sender = _pay_once(chain_a, key="test:unlocked-at-start")

    assert (tx.status, received, sender) == ("mined", 4321, settings.VAULT_ADDRESS)


def test_a_worker_with_another_backend_unlocks_nothing(settings):
    settings.SIGNER_BACKEND = "remote"
    settings.SIGNER_KEYSTORES = {"vault": ("/nonexistent/vault.json", "/nonexistent/vault.passphrase")}
    assert unlock_keystores() == []


class RemoteSigner:
    """A stand-in remote signer (as Web3Signer or Clef answer eth_signTransaction), holding the vault's key."""

    def __init__(self, *, style="web3signer", tamper=False, token="", refuse_to=""):
        self.calls: list[dict] = []
        signer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                signer.calls.append({"request": request, "authorization": self.headers.get("Authorization")})
                if token and self.headers.get("Authorization") != f"Bearer {token}":
                    self.send_response(401)
                    self.end_headers()
                    return
                tx = request["params"][0]
                if refuse_to and tx["to"].lower() == refuse_to.lower():  # its policy refuses this recipient
                    error = {"code": -32000, "message": "policy: recipient not allowed"}
                    body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(body)
                    return
                fields = {
                    name: int(tx[name], 16)
                    for name in ("gas", "nonce", "chainId", "maxFeePerGas", "maxPriorityFeePerGas", "value")
                }
                fields |= {"to": tx["to"], "data": tx["data"], "type": 2}
                if tamper:
                    fields["to"] = "0x" + "66" * 20  # a compromised signer sends the money elsewhere
                raw = "0x" + Account.sign_transaction(fields, VAULT_KEY).raw_transaction.hex()
                result = {"raw": raw, "tx": tx} if style == "clef" else raw
                body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("style", ["web3signer", "clef"])
def test_the_remote_signer_signs_and_the_service_never_holds_the_key(chain_a, settings, style):
    signer = RemoteSigner(style=style, token="s3cret-token")
    settings.SIGNER_BACKEND, settings.SIGNER_REMOTE_URL = "remote", signer.url
    settings.SIGNER_REMOTE_TOKEN = "s3cret-token"
    try:
        tx, received, sender = _pay_once(chain_a, key=f"test:remote:{style}")
    finally:
        signer.close()
    assert (tx.status, received, sender) == ("mined", 4321, settings.VAULT_ADDRESS)
    call = signer.calls[0]
    assert call["request"]["method"] == "eth_signTransaction"
    assert call["request"]["params"][0]["from"] == settings.VAULT_ADDRESS
    assert call["authorization"] == "Bearer s3cret-token"


def test_a_remote_signer_that_signs_another_transaction_is_refused(chain_a, settings):
    signer = RemoteSigner(tamper=True)
    settings.SIGNER_BACKEND, settings.SIGNER_REMOTE_URL = "remote", signer.url
    tx = outbox_submit(key="test:remote:tampered", chain_id=31337, signer="vault", to=new_address(), value=99)
    try:
        with pytest.raises(SignerUnavailable, match="another transaction than the one asked for"):
            outbox_send(tx.pk)
    finally:
        signer.close()
    tx.refresh_from_db()
    assert tx.status == OutboxTx.Status.QUEUED and not tx.raw_tx and tx.nonce is None


def test_a_transaction_the_signer_refuses_stops_only_itself_in_a_burst(chain_a, settings):
    """Three of the vault's transactions queued together, the remote signer's policy refusing the second: the
    first and the third are signed at consecutive nonces and sent; the second waits, queued, with no nonce."""
    refused_to = new_address()
    signer = RemoteSigner(refuse_to=refused_to)
    settings.SIGNER_BACKEND, settings.SIGNER_REMOTE_URL = "remote", signer.url
    w3 = Web3(Web3.HTTPProvider(chain_a[0].rpc_url))
    start = w3.eth.get_transaction_count(settings.VAULT_ADDRESS, "pending")
    first, second, third = (
        outbox_submit(key=f"test:remote:burst:{n}", chain_id=31337, signer="vault", to=to, value=5)
        for n, to in enumerate((new_address(), refused_to, new_address()))
    )
    try:
        outbox_send(first.pk)
        with pytest.raises(SignerUnavailable, match="refused to sign: policy"):
            outbox_send(second.pk)
        outbox_send(third.pk)
    finally:
        signer.close()
    for tx in (first, second, third):
        tx.refresh_from_db()
    assert [(tx.status, tx.nonce) for tx in (first, third)] == [
        ("broadcast", start),
        ("broadcast", start + 1),
    ]
    assert (second.status, second.nonce, second.raw_tx) == ("queued", None, "")
    for tx in (first, third):
        assert until_finished(tx).status == "mined"
    OutboxTx.objects.filter(pk=second.pk).delete()


def test_a_remote_signer_that_is_down_leaves_the_transaction_waiting(chain_a, settings):
    signer = RemoteSigner()
    signer.close()
    settings.SIGNER_BACKEND, settings.SIGNER_REMOTE_URL = "remote", signer.url
    fields = {
        "type": 2,
        "chainId": 31337,
        "nonce": 0,
        "to": new_address(),
        "data": "0x",
        "value": 1,
        "gas": 21000,
        "maxFeePerGas": 10**9,
        "maxPriorityFeePerGas": 1,
    }
    with pytest.raises(SignerUnavailable, match="the remote signer did not answer"):
        sign_transaction("vault", fields)


def _manage(*args, **env):
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "SERVICE_ENV", "ENCRYPTION_KEY", "VAULT_", "SOLVER_", "SIGNER_"))
    }
    production = {
        "SERVICE_ENV": "production",
        "DJANGO_SECRET_KEY": "k3y-" + "x7Qp9zL2mN4vB8wR1tY6uI0oP5aS3dF" * 2,
        "ENCRYPTION_KEY": "q2V0x7eB3l0m9mFh1cW2aKx0JmYk3i8nP4r5s6t7u8E=",
        "VAULT_ADDRESS": "0x" + "34" * 20,
        "RELAY_DEPOSITORIES": "8453:0x" + "56" * 20,  # the relay provider's, pinned (orders.checks)
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **production, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_a_plain_key_in_the_environment_and_the_env_backend():
    refused = _manage("check", VAULT_PRIVATE_KEY=VAULT_KEY)
    assert refused.returncode != 0
    assert "never reads a plain private key from the environment (remove VAULT_PRIVATE_KEY)" in refused.stderr
    assert VAULT_KEY[2:] not in refused.stderr + refused.stdout

    refused = _manage("check", SIGNER_BACKEND="env")
    assert refused.returncode != 0 and "SIGNER_BACKEND=keystore" in refused.stderr

    refused = _manage("check", SIGNER_BACKEND="remote")
    assert refused.returncode != 0 and "needs SIGNER_REMOTE_URL" in refused.stderr

    started = _manage("check", SIGNER_BACKEND="remote", SIGNER_REMOTE_URL="http://127.0.0.1:9000/")
    assert started.returncode == 0, started.stderr
