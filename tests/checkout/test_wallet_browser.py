"""Paying the hosted checkout from a browser wallet, in Chromium, on the devnets.

The wallet is a test EIP-1193 provider injected into the page before its scripts run: it announces itself
the EIP-6963 way (or only sets `window.ethereum`, as an older wallet does), answers the account, chain and
switch requests itself, and forwards the rest (eth_call, eth_getBalance, eth_sendTransaction) to the anvil
node of the chain it is on, whose unlocked accounts sign. Every method the page asks is recorded: the page
may only ask to connect, switch or add the chain, read a balance and send the payment, and, for a token that
takes EIP-3009 when the payer chooses to pay by signature, to sign that one authorization.
Screenshots are kept under var/artifacts/hosted/.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import requests
from django.conf import settings
from playwright.sync_api import expect
from web3 import Web3

from checkout.models import CheckoutSession
from orders.models import Order
from tests.orders.devnet_checkout import drive, erc20, random_address

ARTIFACTS = Path(settings.BASE_DIR) / "var" / "artifacts" / "hosted"

pytestmark = pytest.mark.django_db(transaction=True)

# What a checkout page may ask of a wallet: nothing that signs a message or approves a spender.
ALLOWED = {
    "eth_requestAccounts",
    "eth_chainId",
    "wallet_switchEthereumChain",
    "wallet_addEthereumChain",
    "eth_call",
    "eth_getBalance",
    "eth_sendTransaction",
}

PROVIDER = """
(() => {
  const listeners = {};
  const provider = {
    request: async ({method, params}) => {
      const answer = JSON.parse(await window.__wallet(JSON.stringify({method, params: params || []})));
      if (answer.error) { const error = new Error(answer.error.message); error.code = answer.error.code; throw error; }
      return answer.result;
    },
    on: (name, listener) => { (listeners[name] = listeners[name] || []).push(listener); },
    removeListener: () => {},
  };
  window.__walletEmit = (name, value) => (listeners[name] || []).forEach((listener) => listener(value));
  if (%(legacy)s) { window.ethereum = provider; return; }
  const info = Object.freeze({
    uuid: "5f0c3b1e-7a52-4c1a-9d1e-2f7a8b9c0d1e", name: "Test Wallet", rdns: "test.wallet",
    icon: "data:image/svg+xml,%%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 1 1'%%3E%%3Crect width='1' height='1' fill='%%23f60'/%%3E%%3C/svg%%3E",
  });
  const announce = () => window.dispatchEvent(
    new CustomEvent("eip6963:announceProvider", {detail: Object.freeze({info, provider})}));
  window.addEventListener("eip6963:requestProvider", announce);
  announce();
})();
"""


class Wallet:
    """The test wallet's state: its account, the chain it is on, the chains it knows, what it refuses. With
    `key`, it signs typed data (eth_signTypedData_v4) as the account; else the node's unlocked account sends."""

    def __init__(self, *, account: str, chain_id: int, nodes: dict[int, str], key: bytes | None = None):
        self.key = key
        self.account = account
        self.chain_id = chain_id
        self.nodes = dict(nodes)  # the chains the wallet knows, and where it sends their requests
        self.calls: list[str] = []
        self.added: list[dict] = []
        self.refuse: set[str] = set()
        self.gone = False

    def __call__(self, raw: str) -> str:
        request = json.loads(raw)
        method, params = request["method"], request["params"]
        self.calls.append(method)
        return json.dumps(self._answer(method, params))

    def _answer(self, method: str, params: list) -> dict:
        if self.gone:
            return {"error": {"code": 4900, "message": "The provider is disconnected from all chains."}}
        if method in self.refuse:
            return {"error": {"code": 4001, "message": "User rejected the request."}}
        if method == "eth_requestAccounts":
            return {"result": [self.account]}
        if method == "eth_chainId":
            return {"result": hex(self.chain_id)}
        if method == "wallet_switchEthereumChain":
            wanted = int(params[0]["chainId"], 16)
            if wanted not in self.nodes:
                return {"error": {"code": 4902, "message": "Unrecognized chain ID."}}
            self.chain_id = wanted
            return {"result": None}
        if method == "eth_signTypedData_v4" and self.key is not None:
            from chains.eip3009 import sign_typed_data

            typed = json.loads(params[1])
            uints = {f["name"] for f in typed["types"][typed["primaryType"]] if f["type"].startswith("uint")}
            typed["message"] = {k: int(v) if k in uints else v for k, v in typed["message"].items()}
            return {"result": sign_typed_data(typed, self.key)}
        if method == "wallet_addEthereumChain":
            chain = params[0]
            self.added.append(chain)
            self.nodes[int(chain["chainId"], 16)] = chain["rpcUrls"][0]
            self.chain_id = int(chain["chainId"], 16)
            return {"result": None}
        answer = requests.post(
            self.nodes[self.chain_id],
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
            timeout=10,
        ).json()
        return {"error": answer["error"]} if "error" in answer else {"result": answer["result"]}


def _inject(page, wallet: Wallet, *, legacy: bool = False) -> None:
    page.expose_function("__wallet", wallet)
    page.add_init_script(PROVIDER % {"legacy": "true" if legacy else "false"})


def _link(admin_client, b, *, fee_on_top=False):
    return admin_client.post(
        "/api/v1/payment-links",
        {
            "name": "Devnet zine",
            "token_address": b["contracts"]["dUSDC"],
            "chain_id": b["chain_id"],
            "recipient_address": random_address(),
            "amount": "5000000",
            "fee_on_top": fee_on_top,
            "items": [
                {"name": "Zine, issue 1", "amount": "3000000"},
                {"name": "Sticker", "amount": "1000000", "quantity": 2},
            ],
            "shipping_options": [{"id": "post", "name": "Post", "amount": "1000000"}],
        },
        format="json",
    ).json()


def _start(page, live_server, link, pay_with: str, discount: str = "") -> CheckoutSession:
    page.goto(f"{live_server.url}/pay/{link['short_code']}")
    page.get_by_label("Pay with").select_option(pay_with)
    if discount:
        page.get_by_label("Discount code").fill(discount)
    page.get_by_role("button", name="Pay").click()
    page.wait_for_selector("#deposit-address")
    return CheckoutSession.objects.get(payment_link_id=link["id"])


def test_a_payer_pays_from_an_announced_wallet_after_it_switches_chain(
    devnets_registry, admin_client, live_server, browser_page
):
    (chain_a, a), (chain_b, b) = devnets_registry
    page = browser_page
    payer = requests.post(
        chain_a.rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_accounts"}, timeout=10
    ).json()["result"][1]
    wallet = Wallet(
        account=payer,
        chain_id=b["chain_id"],
        nodes={a["chain_id"]: chain_a.rpc_url, b["chain_id"]: chain_b.rpc_url},
    )
    _inject(page, wallet)
    link = _link(admin_client, b, fee_on_top=True)
    assert (
        admin_client.post(
            "/api/v1/discount-codes", {"code": "ZINE10", "type": "percentage", "value": 10}, format="json"
        ).status_code
        == 201
    )
    session = _start(page, live_server, link, f"{a['chain_id']}:{a['contracts']['dUSDC']}", discount="zine10")
    order = Order.objects.get(session_order__session=session)

    # The pay step says what is paid for: the items, subtotal, discount, shipping, total and the fee.
    summary = page.inner_text("#summary")
    assert "Zine, issue 1" in summary and "Sticker \u00d7 2" in summary
    assert page.inner_text("#summary-subtotal") == "5 dUSDC"
    assert page.inner_text("#summary-discount") == "\u22120.6 dUSDC"  # 10 % of 5 + 1 shipping
    assert page.inner_text("#summary-shipping") == "1 dUSDC"
    assert page.inner_text("#summary-price") == "5.4 dUSDC"
    assert page.locator("#summary-fee").is_visible()
    # The last row is the total: what to send, the fee included.
    assert page.inner_text("#summary tr:last-child").endswith(page.inner_text("#summary-total"))
    assert page.inner_text("#summary-total") == f"{page.inner_text('#pay-amount')} dUSDC"

    token_a, token_b = erc20((chain_a, a)), erc20((chain_b, b))
    payer_before = token_a.functions.balanceOf(Web3.to_checksum_address(payer)).call()
    pay_button = page.get_by_role("button", name="Pay with Test Wallet", exact=True)
    expect(pay_button).to_be_visible()
    page.screenshot(path=ARTIFACTS / "wallet-1-pay.png", full_page=True)
    pay_button.click()
    expect(page.locator("#wallet-tx")).to_be_visible(timeout=30_000)
    tx_hash = page.inner_text("#wallet-tx-hash")
    expect(page.locator("#wallet-status")).to_have_text(
        "Payment sent. Waiting for the network to confirm it…"
    )
    page.screenshot(path=ARTIFACTS / "wallet-2-sent.png", full_page=True)
    assert wallet.chain_id == a["chain_id"] and "wallet_switchEthereumChain" in wallet.calls
    assert set(wallet.calls) <= ALLOWED and wallet.calls.count("eth_sendTransaction") == 1

    # What the wallet sent is the exact payment: a transfer of what the order asks, to its deposit address.
    receipt = requests.post(
        chain_a.rpc_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "eth_getTransactionByHash", "params": [tx_hash]},
        timeout=10,
    ).json()["result"]
    assert receipt["to"].lower() == a["contracts"]["dUSDC"].lower()
    assert receipt["input"] == (
        "0xa9059cbb" + order.global_address[2:].lower().rjust(64, "0") + format(int(order.src_amount), "064x")
    )

    settled = threading.Thread(target=drive, args=(order.pk,), kwargs={"until": ("executed",), "timeout": 90})
    settled.start()
    expect(page.locator("#status")).to_contain_text("Payment complete", timeout=90_000)
    settled.join()
    assert page.locator(f'#receipt [data-value="{tx_hash}"]').count() == 1
    # To the unit: the payer sent exactly what the order asked; the merchant got the whole total (fee on top).
    assert payer_before - token_a.functions.balanceOf(Web3.to_checksum_address(payer)).call() == int(
        order.src_amount
    )
    assert token_b.functions.balanceOf(link["recipient_address"]).call() == 5_400_000
    page.screenshot(path=ARTIFACTS / "wallet-3-complete.png", full_page=True)


def test_each_wallet_failure_is_said_in_plain_words_and_nothing_is_sent(
    devnets_registry, admin_client, live_server, browser_page
):
    (chain_a, a), (chain_b, b) = devnets_registry
    page = browser_page
    empty = random_address()  # holds nothing on either devnet
    wallet = Wallet(account=empty, chain_id=b["chain_id"], nodes={b["chain_id"]: chain_b.rpc_url})
    _inject(page, wallet)
    link = _link(admin_client, b)
    session = _start(page, live_server, link, f"{a['chain_id']}:{a['contracts']['dUSDC']}")
    status = page.locator("#wallet-status")
    pay = page.get_by_role("button", name="Pay with Test Wallet", exact=True)

    wallet.refuse = {"eth_requestAccounts"}
    pay.click()
    expect(status).to_have_text("You declined the request in your wallet. Nothing was sent.")
    page.screenshot(path=ARTIFACTS / "wallet-4-declined.png", full_page=True)

    # The wallet does not know devnet A: the page offers it (a devnet's own RPC URL), then checks the balance.
    wallet.refuse = set()
    pay.click()
    expect(status).to_contain_text("Your wallet holds 0 dUSDC; this payment needs")
    assert wallet.added and wallet.added[0]["rpcUrls"] == [chain_a.rpc_url]
    assert wallet.added[0]["chainId"] == hex(a["chain_id"])
    page.screenshot(path=ARTIFACTS / "wallet-5-balance.png", full_page=True)

    wallet.gone = True
    pay.click()
    expect(status).to_have_text(
        "Your wallet disconnected. Reconnect it, or pay to the address with the QR code."
    )
    assert "eth_sendTransaction" not in wallet.calls and set(wallet.calls) <= ALLOWED
    # The other ways to pay stay.
    assert (
        page.get_by_role("button", name="Copy address").is_visible() and page.locator(".qr svg").count() == 1
    )
    assert not Order.objects.get(session_order__session=session).deposit_txs.exists()


def test_a_wallet_that_only_sets_window_ethereum_is_offered_too(
    devnets_registry, admin_client, live_server, browser_page
):
    (chain_a, a), (_, b) = devnets_registry
    page = browser_page
    wallet = Wallet(account=random_address(), chain_id=a["chain_id"], nodes={a["chain_id"]: chain_a.rpc_url})
    _inject(page, wallet, legacy=True)
    _start(page, live_server, _link(admin_client, b), f"{a['chain_id']}:{a['contracts']['dUSDC']}")
    expect(page.get_by_role("button", name="Pay with Browser wallet", exact=True)).to_be_visible()
    wallet.refuse = {"eth_sendTransaction"}
    page.evaluate("window.__walletEmit('disconnect', {code: 4900})")
    expect(page.locator("#wallet-status")).to_have_text(
        "Your wallet disconnected. Reconnect it, or pay to the address with the QR code."
    )


def test_without_a_wallet_the_page_offers_none(devnets_registry, admin_client, live_server, browser_page):
    (_, a), (_, b) = devnets_registry
    page = browser_page
    _start(page, live_server, _link(admin_client, b), f"{a['chain_id']}:{a['contracts']['dUSDC']}")
    page.wait_for_timeout(500)  # past the script's wait for a legacy wallet
    assert page.locator("#wallet").is_hidden()
    assert page.get_by_role("button", name="Copy address").is_visible()


def test_a_payer_without_gas_pays_by_signature_and_the_service_submits_it(
    devnets_registry, admin_client, live_server, browser_page
):
    """dUSDC takes EIP-3009: the wallet step offers paying by signature. The payer holds dUSDC and no ETH at
    all; its wallet signs once (eth_signTypedData_v4), sends nothing, and the order is paid and delivered."""
    from eth_account import Account

    from facilitator.models import Settlement

    (chain_a, a), (chain_b, b) = devnets_registry
    page = browser_page
    payer = Account.create()
    token_a, token_b = erc20((chain_a, a)), erc20((chain_b, b))
    funder = requests.post(
        chain_a.rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_accounts"}, timeout=10
    ).json()["result"][1]
    w3 = Web3(Web3.HTTPProvider(chain_a.rpc_url))
    w3.eth.wait_for_transaction_receipt(
        token_a.functions.transfer(payer.address, 20_000_000).transact(
            {"from": Web3.to_checksum_address(funder)}
        )
    )
    wallet = Wallet(
        account=payer.address,
        chain_id=a["chain_id"],
        nodes={a["chain_id"]: chain_a.rpc_url, b["chain_id"]: chain_b.rpc_url},
        key=payer.key,
    )
    _inject(page, wallet)
    link = _link(admin_client, b)
    session = _start(page, live_server, link, f"{a['chain_id']}:{a['contracts']['dUSDC']}")
    order = Order.objects.get(session_order__session=session)
    sign_button = page.get_by_role("button", name="Pay with Test Wallet, no gas needed")
    expect(sign_button).to_be_visible()
    page.screenshot(path=ARTIFACTS / "wallet-6-sign.png", full_page=True)

    settled = threading.Thread(target=drive, args=(order.pk,), kwargs={"until": ("executed",), "timeout": 90})
    settled.start()
    sign_button.click()
    # The service's transaction shows under the wallet, until the status poll finds the order complete (on a
    # fast devnet it may find it first); the receipt then names it as the payer's deposit.
    expect(page.locator("#status")).to_contain_text("Payment complete", timeout=90_000)
    settled.join()
    page.screenshot(path=ARTIFACTS / "wallet-7-signed-complete.png", full_page=True)

    order.refresh_from_db()
    assert order.status == "executed"
    assert "eth_signTypedData_v4" in wallet.calls and "eth_sendTransaction" not in wallet.calls
    assert set(wallet.calls) <= ALLOWED | {"eth_signTypedData_v4"}
    settlement = Settlement.objects.get()
    assert page.locator(f'#receipt [data-value="{settlement.tx_hash}"]').count() == 1
    assert (settlement.payer, settlement.pay_to) == (payer.address, order.global_address)
    assert token_a.functions.balanceOf(payer.address).call() == 20_000_000 - int(order.src_amount)
    assert w3.eth.get_balance(payer.address) == 0  # it never held, nor needed, any ETH
    assert token_b.functions.balanceOf(link["recipient_address"]).call() == int(order.settlement["dstAmount"])
