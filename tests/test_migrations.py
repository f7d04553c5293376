"""Data migrations on a populated database: every value survives, and what is now encrypted is encrypted."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [
    ("platform_api", "0015_transaction_refunded_amount"),
    ("orders", "0009_deposit_source_and_withdrawal"),
    ("webhooks", "0004_notification_emails"),
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


def old_order(apps, n: int, **fields):
    """An order as the historical models `apps` build it: a swap on Base at the `n`th address."""
    defaults = {
        "type": "swap",
        "recipient_address": "0x" + "2" * 40,
        "global_address": f"0x{n:040x}",
        "src_chain": 8453,
        "dst_chain": 8453,
        "src_token_address": "0x" + "1" * 40,
        "dst_token_address": "0x" + "1" * 40,
        "src_amount": "1",
        "expired_at": "2026-01-01T00:00:00Z",
    }
    return apps.get_model("orders", "Order").objects.create(**(defaults | fields))


def latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def test_personal_data_is_encrypted_in_place_and_keeps_every_value():
    old = migrate(BEFORE)
    try:
        org = old.get_model("platform_api", "Organization").objects.create(
            id="org_1", slug="acme", name="Acme"
        )
        form = {"email": "ada@example.com", "note": "ring twice"}
        address = {"line1": "12 Analytical Row", "city": "London"}
        now = "2026-01-01T00:00:00Z"
        session = old.get_model("platform_api", "PlatformCheckoutSession").objects.create(
            id="cs_1",
            organization=org,
            token_address="0x" + "1" * 40,
            chain_id=8453,
            recipient_address="0x" + "2" * 40,
            form_data=form,
            shipping_address=address,
            expires_at=now,
        )
        old.get_model("platform_api", "Transaction").objects.create(
            id="txn_1",
            organization=org,
            order_id=uuid.uuid4(),
            session=session,
            chain_id=8453,
            to_address="0x" + "2" * 40,
            token_address="0x" + "1" * 40,
            amount="5",
            source_chain_id=8453,
            source_token_address="0x" + "1" * 40,
            source_amount="6",
            form_data=form,
            shipping_address=None,
        )
        old.get_model("orders", "Order").objects.create(
            type="swap",
            recipient_address="0x" + "2" * 40,
            global_address="0x" + "3" * 40,
            src_chain=8453,
            dst_chain=8453,
            src_token_address="0x" + "1" * 40,
            dst_token_address="0x" + "1" * 40,
            src_amount="1",
            expired_at=now,
            onramp_metadata={"ipAddress": "203.0.113.77"},
        )
        endpoint = old.get_model("webhooks", "WebhookEndpoint").objects.create(
            id="wh_1", organization=org, url="https://hooks.example/x", secret_encrypted="x"
        )
        event = old.get_model("webhooks", "WebhookEvent").objects.create(
            id="evt_1", organization=org, event_type="checkout.completed", data={"form_data": form}
        )
        old.get_model("webhooks", "WebhookDelivery").objects.create(
            id="del_1",
            endpoint=endpoint,
            event=event,
            event_type="checkout.completed",
            body='{"data":{"form_data":{"email":"ada@example.com"}}}',
        )
        old.get_model("webhooks", "NotificationEmail").objects.create(
            id="ntf_1",
            organization=org,
            event=event,
            event_type="checkout.completed",
            to_address="owner@shop.example",
            subject="Checkout completed",
            body="Payer: ada@example.com",
        )
    finally:
        migrate(latest())

    from checkout.models import CheckoutSession, Transaction
    from orders.models import Order
    from webhooks.models import NotificationEmail, WebhookDelivery, WebhookEvent

    session = CheckoutSession.objects.get(pk="cs_1")
    assert (session.form_data, session.shipping_address) == (form, address)
    assert (Transaction.objects.get().form_data, Transaction.objects.get().shipping_address) == (form, None)
    assert Order.objects.get().onramp_metadata == {"ipAddress": "203.0.113.77"}
    assert WebhookEvent.objects.get().data == {"form_data": form}
    assert WebhookDelivery.objects.get().body == '{"data":{"form_data":{"email":"ada@example.com"}}}'
    email = NotificationEmail.objects.get()
    assert (email.to_address, email.body) == ("owner@shop.example", "Payer: ada@example.com")
    assert everything_stored().count("ada@example.com") == 0
    assert "203.0.113.77" not in everything_stored() and "Analytical" not in everything_stored()


def everything_stored() -> str:
    """Every row of every table, as text: what a database dump would show."""
    dump = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608 - names from the schema
            dump.extend(str(row) for row in cursor.fetchall())
    return "\n".join(dump)


def test_orders_without_token_shapes_get_them_from_the_registry():
    old = migrate(
        [("orders", "0010_encrypt_personal_data"), ("chains", "0006_reorg_safe_deposits_and_incidents")]
    )
    try:
        usdc = "0x" + "A" * 40
        old.get_model("chains", "Token").objects.create(
            chain_id=8453, address=usdc, symbol="USDC", name="USD Coin", decimals=6
        )
        hosted = old.get_model("orders", "Order").objects.create(
            type="x402_swap",
            recipient_address="0x" + "2" * 40,
            global_address="0x" + "3" * 40,
            src_chain=8453,
            dst_chain=8453,
            src_token_address=usdc.lower(),
            dst_token_address=usdc,
            src_amount="1",
            expired_at="2026-01-01T00:00:00Z",
            metadata={"checkoutSessionId": "cs_1"},
        )
        unknown = old.get_model("orders", "Order").objects.create(
            type="swap",
            recipient_address="0x" + "2" * 40,
            global_address="0x" + "4" * 40,
            src_chain=1,
            dst_chain=1,
            src_token_address="0x" + "5" * 40,
            dst_token_address="0x" + "5" * 40,
            src_amount="1",
            expired_at="2026-01-01T00:00:00Z",
            metadata={"note": "kept"},
        )
        new = migrate(latest())
        Order = new.get_model("orders", "Order")
        metadata = Order.objects.get(pk=hosted.pk).metadata
        assert metadata["checkoutSessionId"] == "cs_1"
        assert (
            metadata["srcToken"]
            == metadata["dstToken"]
            == {
                "chainId": 8453,
                "address": usdc,
                "symbol": "USDC",
                "name": "USD Coin",
                "decimals": 6,
                "metadata": {},
            }
        )
        assert Order.objects.get(pk=unknown.pk).metadata == {"note": "kept"}
    finally:
        migrate(latest())


def test_the_session_to_order_link_moves_to_the_checkout_without_losing_a_row():
    """Issue 25: `Order.platform_session` becomes `checkout.SessionOrder`; the order is owned by the checkout and
    keeps its fixed price. An order of the order interface is left as it was."""
    old = migrate(
        [
            ("checkout", None),
            ("orders", "0012_refund_addresses"),
            ("platform_api", "0016_encrypt_personal_data"),
        ]
    )
    try:
        org = old.get_model("platform_api", "Organization").objects.create(
            id="org_2", slug="shop", name="Shop"
        )
        Session = old.get_model("platform_api", "PlatformCheckoutSession")
        sessions = [
            Session.objects.create(
                id=f"cs_{n}",
                organization=org,
                token_address="0x" + "1" * 40,
                chain_id=8453,
                recipient_address="0x" + "2" * 40,
                expires_at="2026-01-01T00:00:00Z",
            )
            for n in range(2)
        ]

        def order(session, n):
            return old_order(old, n, type="x402_swap", platform_session=session).pk

        # The first session's payer changed token once (two orders); the third order has no session.
        linked = {order(sessions[0], 1): "cs_0", order(sessions[0], 2): "cs_0", order(sessions[1], 3): "cs_1"}
        own = order(None, 4)
    finally:
        migrate(latest())

    from checkout.models import SessionOrder
    from orders.models import Order as NewOrder

    assert dict(SessionOrder.objects.values_list("order_id", "session_id")) == linked
    assert {(o.owner, o.fixed_price) for o in NewOrder.objects.filter(pk__in=linked)} == {("checkout", True)}
    mine = NewOrder.objects.get(pk=own)
    assert (mine.owner, mine.fixed_price) == ("", False)


def test_the_order_interfaces_sessions_become_the_one_checkout_session_with_every_row():
    """Issue 42: `orders.CheckoutSession` rows are copied into `checkout.CheckoutSession` (the platform's table)
    with every value, `complete` said `completed`; each order keeps its session by id; platform rows stay."""
    old = migrate(
        [
            ("checkout", "0005_dashboard_search_indexes"),
            ("orders", "0016_deposit_refund_flagged_index"),
        ]
    )
    try:
        org = old.get_model("platform_api", "Organization").objects.create(id="org_3", slug="s3", name="S3")
        Old = old.get_model("orders", "CheckoutSession")
        old.get_model("checkout", "PlatformCheckoutSession").objects.create(
            id="cs_kept",
            organization=org,
            token_address="0x" + "1" * 40,
            chain_id=8453,
            recipient_address="0x" + "2" * 40,
            amount="7",
            expires_at="2026-01-01T00:00:00Z",
        )
        paid = Old.objects.create(
            organization=org,
            status="complete",
            success_url="https://shop.example/ok",
            metadata={"cart": "42"},
            client_reference_id="ref-1",
            expires_at="2026-01-01T00:30:00Z",
            created_at="2026-01-01T00:00:00Z",
            completed_at="2026-01-01T00:10:00Z",
        )
        anonymous = Old.objects.create(status="expired", expires_at="2026-01-01T00:30:00Z")
        order = old_order(old, 4, checkout_session=paid).pk
    finally:
        migrate(latest())

    from checkout.models import CheckoutSession
    from orders.models import Order as NewOrder

    copied = CheckoutSession.objects.get(pk=str(paid.pk))
    assert copied.created_through == "order_interface"
    assert (copied.organization_id, copied.status, copied.success_url, copied.cancel_url) == (
        "org_3",
        "completed",
        "https://shop.example/ok",
        "",
    )
    assert (copied.metadata, copied.client_reference_id) == ({"cart": "42"}, "ref-1")
    assert copied.completed_at.isoformat() == "2026-01-01T00:10:00+00:00"
    alone = CheckoutSession.objects.get(pk=str(anonymous.pk))
    assert (alone.organization_id, alone.status, alone.chain_id, alone.token_address) == (
        None,
        "expired",
        None,
        "",
    )
    assert NewOrder.objects.get(pk=order).checkout_session_id == str(paid.pk)
    kept = CheckoutSession.objects.get(pk="cs_kept")
    assert (kept.created_through, kept.amount, kept.chain_id) == ("platform", 7, 8453)
    assert CheckoutSession.objects.count() == 3


def test_quick_payments_move_to_their_app_with_every_row():
    """Issue 25: QuickPayment and QuickPaymentDeposit change app, not table: rows and links stay."""
    old = migrate(
        [("quickpay", None), ("platform_api", "0016_encrypt_personal_data"), ("chains", "0009_signer_gas")]
    )
    try:
        Payment = old.get_model("platform_api", "QuickPayment")
        payment = Payment.objects.create(
            id="qp_1",
            amount=2_500_000,
            amount_received="2500000",
            token_address="0x" + "1" * 40,
            chain_id=8453,
            recipient_address="0x" + "2" * 40,
            deposit_address="0x" + "3" * 40,
            status="paid",
            expires_at="2026-01-01T00:00:00Z",
        )
        deposit = old.get_model("chains", "Deposit").objects.create(
            chain_id=8453,
            tx_hash="0x" + "a" * 64,
            log_index=0,
            block_number=1,
            block_hash="0x" + "b" * 64,
            from_address="0x" + "4" * 40,
            to_address=payment.deposit_address,
            token="0x" + "1" * 40,
            amount="2500000",
            owner="quick_payment:qp_1",
        )
        old.get_model("platform_api", "QuickPaymentDeposit").objects.create(
            payment=payment, deposit=deposit, counted=2_500_000, refund=0
        )
    finally:
        migrate(latest())

    from quickpay.models import QuickPayment

    moved = QuickPayment.objects.get(pk="qp_1")
    assert (moved.status, moved.amount, moved.amount_received) == ("paid", 2_500_000, "2500000")
    assert [(int(d.counted), d.deposit.tx_hash) for d in moved.deposits.all()] == [
        (2_500_000, "0x" + "a" * 64)
    ]


def test_the_merchant_records_move_to_checkout_merchant_and_webhooks_with_every_row():
    """Issue 25: eleven models change app, not table: every row, relation and encrypted value stays."""
    old = migrate(
        [
            ("merchant", None),
            ("checkout", "0001_initial"),
            ("platform_api", "0017_quick_payments_move_to_quickpay"),
            ("webhooks", "0005_encrypt_personal_data"),
        ]
    )
    token, recipient, payer = "0x" + "1" * 40, "0x" + "2" * 40, "0x" + "3" * 40
    try:

        def model(name):
            return old.get_model("platform_api", name)

        org = model("Organization").objects.create(id="org_3", slug="mugs", name="Mugs")
        product = model("Product").objects.create(
            id="prod_1", organization=org, name="Mug", amount=5, token_address=token, chain_id=8453
        )
        link = model("PaymentLink").objects.create(
            id="pl_1",
            organization=org,
            name="Mugs",
            short_code="mugs0001",
            token_address=token,
            chain_id=8453,
            recipient_address=recipient,
            product_id=product.pk,
        )
        model("PaymentLinkItem").objects.create(id="pli_1", payment_link=link, name="Mug", amount=5)
        code = model("DiscountCode").objects.create(
            id="dc_1", organization=org, payment_link=link, code="TEN", type="percentage", value=10
        )
        customer = model("Customer").objects.create(
            id="cust_1", organization=org, wallet_address=payer, email="ada@example.com"
        )
        widget = model("Widget").objects.create(
            id="wgt_1", organization=org, name="Shop", widget_type="checkout", short_code="wgt00001"
        )
        session = model("PlatformCheckoutSession").objects.create(
            id="cs_9",
            organization=org,
            payment_link=link,
            discount_code=code,
            customer=customer,
            widget=widget,
            token_address=token,
            chain_id=8453,
            recipient_address=recipient,
            expires_at="2026-01-01T00:00:00Z",
            customer_email="ada@example.com",
        )
        model("Transaction").objects.create(
            id="txn_1",
            organization=org,
            session=session,
            payment_link=link,
            customer=customer,
            chain_id=8453,
            to_address=recipient,
            token_address=token,
            amount=5,
            order_id=uuid.uuid4(),
            source_chain_id=8453,
            source_token_address=token,
            source_amount=5,
            form_data={"email": "ada@example.com"},
        )
        model("LinkVisit").objects.create(id="vis_1", payment_link=link)
        model("WidgetEvent").objects.create(widget=widget, kind="view")
        model("RevenueDay").objects.create(
            organization=org, day="2026-01-01", chain_id=8453, token_address=token, transactions=1
        )
        model("NotificationSettings").objects.create(
            id="ns_1", organization=org, email_enabled=True, email_address="ops@example.com"
        )
    finally:
        migrate(latest())

    from checkout.models import (
        CheckoutSession,
        DiscountCode,
        LinkVisit,
        PaymentLink,
        Transaction,
        Widget,
        WidgetEvent,
    )
    from merchant.models import Customer, Product, RevenueDay
    from webhooks.models import NotificationSettings

    moved = PaymentLink.objects.get(pk="pl_1")
    assert (moved.product_id, [i.pk for i in moved.items.all()]) == ("prod_1", ["pli_1"])
    assert DiscountCode.objects.get().payment_link_id == "pl_1"
    session = CheckoutSession.objects.get()
    assert (session.payment_link_id, session.discount_code_id, session.customer_id, session.widget_id) == (
        "pl_1",
        "dc_1",
        "cust_1",
        "wgt_1",
    )
    assert session.customer_email == "ada@example.com"  # still decrypts
    txn = Transaction.objects.get()
    assert (txn.session_id, txn.customer_id, txn.form_data) == (
        "cs_9",
        "cust_1",
        {"email": "ada@example.com"},
    )
    assert Customer.objects.get().email == "ada@example.com"
    assert [c.pk for c in Customer.objects.get().transactions.all()] == ["txn_1"]
    assert (Product.objects.get().name, RevenueDay.objects.get().transactions) == ("Mug", 1)
    assert (LinkVisit.objects.count(), WidgetEvent.objects.get().widget_id) == (1, Widget.objects.get().pk)
    assert NotificationSettings.objects.get().email_address == "ops@example.com"


def _word(address: str) -> str:
    return "0x" + "00" * 12 + address[2:].lower()


def test_the_ledger_is_backfilled_from_deposits_outbox_transactions_fees_and_card_payments(settings):
    """Issue 26: what was recorded before the ledger is posted, balanced, once."""
    from ledger.observed import TRANSFER_TOPIC

    old = migrate(
        [
            ("ledger", "0002_chain_blocks_and_reconcile_runs"),
            ("chains", "0010_outbox_gas_price"),
            ("orders", "0014_remove_order_platform_session"),
        ]
    )
    vault, usdc = settings.VAULT_ADDRESS, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    from eth_utils import to_checksum_address

    forwarder = to_checksum_address("0x" + "d0" * 20)  # addresses are kept EIP-55 checksummed
    payer, stranger = to_checksum_address("0x" + "aa" * 20), to_checksum_address("0x" + "bb" * 20)
    try:
        order = old.get_model("orders", "Order").objects.create(
            type="x402_swap",
            status="executed",
            recipient_address="0x" + "11" * 20,
            global_address=forwarder,
            src_chain=8453,
            dst_chain=8453,
            src_token_address=usdc,
            dst_token_address=usdc,
            src_amount=10_000_000,
            expired_at="2026-01-01T00:00:00Z",
            settlement={"srcAmountReceived": "10000000", "feeBps": 80, "dstAmount": "9920000"},
        )
        old.get_model("chains", "WatchedAddress").objects.create(
            chain_id=8453, address=forwarder, owner=f"order:{order.pk}", watch_until="2026-01-01T00:00:00Z"
        )
        deposit = old.get_model("chains", "Deposit")
        common = {"chain_id": 8453, "to_address": forwarder, "token": usdc, "owner": f"order:{order.pk}"}
        deposit.objects.create(
            **common,
            tx_hash="0x" + "01" * 32,
            log_index=0,
            block_number=100,
            block_hash="0x" + "a1" * 32,
            from_address=payer,
            amount="10000000",
            handled_at="2026-01-01T00:00:00Z",
        )
        deposit.objects.create(
            **common,
            tx_hash="0x" + "02" * 32,
            log_index=0,
            block_number=101,
            block_hash="0x" + "a2" * 32,
            from_address=payer,
            amount="7",
            status="withdrawn",
            handled_at="2026-01-01T00:00:00Z",
        )
        old.get_model("chains", "OutboxTx").objects.create(
            key=f"order:{order.pk}:sweep",
            chain_id=8453,
            signer="vault",
            sender=vault,
            to="0x" + "fa" * 20,
            status="mined",
            tx_hash="0x" + "03" * 32,
            block_number=102,
            block_hash="0x" + "a3" * 32,
            gas_used=50_000,
            effective_gas_price=2_000_000_000,
            logs=[
                {
                    "address": usdc,
                    "topics": [TRANSFER_TOPIC, _word(forwarder), _word(vault)],
                    "data": hex(10_000_000),
                },
                {"address": usdc, "topics": [TRANSFER_TOPIC, _word(stranger), _word(payer)], "data": hex(5)},
            ],
        )
        card = old.get_model("orders", "DepositTx").objects.create(
            order=order, chain=8453, tx_hash="pi_card1", amount=3_000_000, token_address=usdc
        )
        old.get_model("orders", "RefundTx").objects.create(
            order=order, deposit=card, chain=8453, tx_hash="re_1", amount=3_000_000, status="success"
        )
    finally:
        migrate(latest())

    from ledger.backfill import Backfill
    from ledger.models import Entry, Posting
    from orders.accounting import backfill

    def balance(kind, ref, token=usdc):
        signed = {"debit": 1, "credit": -1}
        return sum(
            signed[side] * amount
            for side, amount in Entry.objects.filter(
                account__kind=kind, account__ref=ref.lower(), account__token=token.lower()
            ).values_list("side", "amount")
        )

    keys = set(Posting.objects.values_list("key", flat=True))
    assert {k.split(":")[0] for k in keys} == {"deposit", "outbox", "fee", "card", "card-refund"}
    assert balance("deposit_address", forwarder) == 0  # 10 USDC in, swept out; the withdrawn 7 undone
    assert balance("vault", vault) == 10_000_000 - 80_000 and balance("fees", vault) == 80_000
    assert balance("payer", payer) == -10_000_000  # the stranger's transfer is not the service's
    assert balance("gas", vault, "0x" + "00" * 20) == 50_000 * 2_000_000_000
    assert balance("card", "vendor_b") == 0
    assert Posting.objects.get(key=f"outbox:order:{order.pk}:sweep:{'0x' + 'a3' * 32}").block_number == 102
    for posting in Posting.objects.all():
        sides = {"debit": 0, "credit": 0}
        for side, amount in posting.entries.values_list("side", "amount"):
            sides[side] += amount
        assert sides["debit"] == sides["credit"] > 0

    from django.apps import apps

    entries = Entry.objects.count()
    run = Backfill(apps)
    run.deposits(apps.get_model("chains", "Deposit"))
    assert backfill(apps, run) == 0 and Entry.objects.count() == entries  # run again: nothing twice


def test_a_delivery_recorded_twice_for_one_order_is_kept_once():
    """Issue 43: two settlements of one order at once recorded its delivery twice; the migration keeps the first
    row of each (order, transaction) before it makes them unique, and touches nothing else."""
    old = migrate([("orders", "0019_relay_refunds_index")])
    try:
        first, second = old_order(old, 901), old_order(old, 902)
        RelayTx = old.get_model("orders", "RelayTx")
        twice = [RelayTx.objects.create(order=first, chain=8453, tx_hash="0x" + "a" * 64) for _ in range(2)]
        other = RelayTx.objects.create(order=first, chain=8453, tx_hash="0x" + "b" * 64)
        same_hash = RelayTx.objects.create(order=second, chain=8453, tx_hash="0x" + "a" * 64)

        new = migrate(latest())

        kept = set(new.get_model("orders", "RelayTx").objects.values_list("pk", flat=True))
        assert kept == {twice[0].pk, other.pk, same_hash.pk}
    finally:
        migrate(latest())


def test_the_outbox_keeps_every_row_with_its_key_taken_apart():
    """Issue 65: the outbox's owner, step and funds columns are filled from each stored key, every row kept."""
    old = migrate([("chains", "0015_watched_look_back")])
    stored = {
        "order:5bd0f0c5-2d46-4414-8a1b-360f08118703:relay:0": "vault",
        "refund:re_1:delivery": "vault",
        "inventory:router-allowance:8453:0xabc:0": "solver",
        "chains:deploy-factory:8453": "deployer",
        "order:5bd0f0c5-2d46-4414-8a1b-360f08118703:swep": "vault",  # a step no code writes
    }
    try:
        Outbox = old.get_model("chains", "OutboxTx")
        for n, (key, signer) in enumerate(stored.items()):
            Outbox.objects.create(
                key=key,
                chain_id=8453,
                signer=signer,
                sender="0x" + "1" * 40,
                to=f"0x{n:040x}",
                status="mined",
            )
    finally:
        migrate(latest())

    from chains.models import OutboxTx

    rows = {tx.key: (tx.owner, tx.step, tx.funds, tx.status) for tx in OutboxTx.objects.all()}
    order = "order:5bd0f0c5-2d46-4414-8a1b-360f08118703"
    assert rows == {
        f"{order}:relay:0": (order, "relay", "recipient", "mined"),
        "refund:re_1:delivery": ("refund:re_1", "delivery", "payer", "mined"),
        "inventory:router-allowance:8453:0xabc:0": (
            "inventory:router-allowance",
            "allowance",
            "recipient",
            "mined",
        ),
        "chains:deploy-factory:8453": ("chains:deploy-factory", "deploy", "operator", "mined"),
        f"{order}:swep": (order, "", "recipient", "mined"),
    }
