"""factory_boy factories, one per model (proxies and the tenant-free bookkeeping rows aside), grouped by app.

Each builds a valid row with what its model needs and nothing else, so that a test states only what matters
to it: `PaymentLinkFactory(amount=4_000_000)`, `OrderFactory(status="executed")`. Relations are built by
SubFactory; the organization of a nested row follows its parent's (`PaymentLinkItemFactory` uses its link's).
API keys go through the service so that their digests are real; a webhook endpoint's secret is encrypted as
the service stores it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta

import factory
from django.core.serializers.json import DjangoJSONEncoder
from django.utils import timezone

from audit.models import AuditEvent
from chains.models import (
    AdoptedTx,
    Chain,
    ChainCursor,
    Deposit,
    Incident,
    OutboxTx,
    SenderNonce,
    Token,
    WatchedAddress,
)
from checkout.models import (
    CheckoutSession,
    DiscountCode,
    LinkVisit,
    PaymentLink,
    PaymentLinkItem,
    SessionOrder,
    Transaction,
    Widget,
    WidgetEvent,
)
from core.models import ClusterIdentity
from dashboard.models import Invitation, Member, RecoveryCode, RecoveryCodes, Role, recovery_digest
from facilitator.models import PayerTurn, Settlement
from ledger.models import Account, BalanceTransaction, Entry, Posting, ReconcileRun, ReconcileStart
from merchant.models import Customer, OrganizationLogo, Product, RevenueDay
from onramp.models import VendorBEvent
from orders.models import (
    DepositTx,
    ExposureLimit,
    FastFill,
    Inventory,
    InventoryFront,
    InventoryRefill,
    Order,
    OrderBody,
    OrderStatusChange,
    RefundTx,
    RelayTx,
    SolverAllowance,
)
from orders.representations import order_detail_data
from orders.selectors import OrderWithTransactions
from platform_api.models import ApiKey, IdempotencyRecord, Organization, RateLimitBucket
from platform_api.services import api_key_create
from quickpay.models import QuickPayment, QuickPaymentDeposit
from refunds.models import (
    Refund,
    RefundBalance,
    RefundDeposit,
    RefundTopUp,
    RefundTopUpDeposit,
    RefundWithdrawal,
)
from webhooks.crypto import encrypt_secret
from webhooks.models import (
    NotificationEmail,
    NotificationSettings,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)

BASE = 8453
USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"  # in the shipped token list
RECIPIENT = "0x" + "2" * 40


def address(n: int) -> str:
    return f"0x{n:040x}"


def tx_hash(n: int) -> str:
    return f"0x{n:064x}"


def later(**delta):
    return factory.LazyFunction(lambda: timezone.now() + timedelta(**delta))


# --- platform_api: the tenant kernel ------------------------------------------------------------


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"org-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())
    contact_email = factory.LazyAttribute(lambda o: f"ops@{o.slug}.example")


def make_api_key(organization=None, *, permissions=("admin",), name="test key", expires_at=None):
    """Create a key through the service; returns (ApiKey, raw key)."""
    return api_key_create(
        organization=organization or OrganizationFactory(),
        name=name,
        permissions=list(permissions),
        expires_at=expires_at,
    )


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """Made by the service (`make_api_key` also gives the raw key)."""

    class Meta:
        model = ApiKey

    organization = factory.SubFactory(OrganizationFactory)
    name = "test key"
    permissions = ("admin",)

    @classmethod
    def _create(cls, model_class, *, organization, name, permissions, **kwargs):
        api_key, _ = make_api_key(organization, permissions=permissions, name=name, **kwargs)
        return api_key


class IdempotencyRecordFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = IdempotencyRecord

    scope = factory.Sequence(lambda n: f"org_{n}")
    key = factory.Sequence(lambda n: f"key-{n}")
    method = "POST"
    path = "/api/v1/payment-links"
    request_digest = "0" * 64
    response_status = 201


class RateLimitBucketFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RateLimitBucket

    bucket = factory.Sequence(lambda n: f"bucket-{n}")


class AuditEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditEvent

    organization = factory.SubFactory(OrganizationFactory)
    event_type = "api_key.created"
    resource_type = "api_key"
    resource_id = factory.Sequence(lambda n: f"ak_{n:024d}")
    ip_address = "203.0.113.7"
    request_method = "POST"
    request_path = "/api/v1/api-keys"
    status_code = 201
    actor = factory.LazyAttribute(lambda o: f"api_key:ak_{o.resource_id[-6:]}")
    created_at = factory.LazyFunction(timezone.now)


# --- chains -------------------------------------------------------------------------------------


class ClusterIdentityFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ClusterIdentity

    code_version = factory.Faker("hexify", text="^" * 16)
    encryption_key_fingerprint = factory.Faker("hexify", text="^" * 32)
    secret_key_fingerprint = factory.Faker("hexify", text="^" * 32)
    migrated_at = factory.LazyFunction(timezone.now)


class ChainFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Chain
        django_get_or_create = ("chain_id",)

    chain_id = factory.Sequence(lambda n: 900_000 + n)
    name = factory.LazyAttribute(lambda c: f"Chain {c.chain_id}")
    native_symbol = "ETH"


class ChainCursorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChainCursor
        django_get_or_create = ("chain_id",)

    chain_id = BASE


class TokenFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Token

    chain_id = BASE
    address = factory.Sequence(lambda n: address(0xA0000 + n))
    symbol = factory.Sequence(lambda n: f"TK{n}")
    name = factory.LazyAttribute(lambda t: f"Token {t.symbol}")
    decimals = 6


class WatchedAddressFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WatchedAddress

    chain_id = BASE
    address = factory.Sequence(lambda n: address(0xB0000 + n))
    owner = factory.Sequence(lambda n: f"order:{uuid.UUID(int=n)}")
    watch_until = later(hours=1)


class DepositFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Deposit

    chain_id = BASE
    tx_hash = factory.Sequence(lambda n: tx_hash(0xC0000 + n))
    log_index = 0
    block_number = factory.Sequence(lambda n: 100 + n)
    block_hash = factory.Sequence(lambda n: tx_hash(0xD0000 + n))
    from_address = address(0x3)
    to_address = factory.Sequence(lambda n: address(0xB0000 + n))
    token = USDC_BASE
    amount = 1_000_000
    owner = factory.Sequence(lambda n: f"order:{uuid.UUID(int=n)}")


class SenderNonceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SenderNonce

    chain_id = BASE
    address = factory.Sequence(lambda n: address(0xE0000 + n))
    next_nonce = 0


class OutboxTxFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = OutboxTx

    key = factory.Sequence(lambda n: f"test:{n}:transfer")
    chain_id = BASE
    signer = "vault"
    sender = address(0xF39F)
    to = RECIPIENT


class AdoptedTxFactory(factory.django.DjangoModelFactory):
    """A transaction of the vault found on the chain that the database did not hold (a restore)."""

    class Meta:
        model = AdoptedTx

    chain_id = BASE
    sender = address(0xF39F)
    signer = "vault"
    nonce = factory.Sequence(lambda n: n)
    tx_hash = factory.Sequence(lambda n: "0x" + f"{n:064x}")
    to = RECIPIENT
    data = "0x"
    value = 1
    block_number = 100


class IncidentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Incident

    kind = Incident.Kind.DEPOSIT_REORGED
    subject = factory.Sequence(lambda n: f"deposit:{n}")
    summary = "A counted deposit's block left the chain."


# --- ledger -------------------------------------------------------------------------------------


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account
        django_get_or_create = ("chain_id", "token", "kind", "ref")

    chain_id = BASE
    token = USDC_BASE.lower()
    kind = Account.Kind.VAULT
    ref = address(0xF39F)


class PostingFactory(factory.django.DjangoModelFactory):
    """A posting without its entries: the ledger's `post` writes balanced ones; this is for reading code."""

    class Meta:
        model = Posting

    key = factory.Sequence(lambda n: f"test:{n}")
    kind = "sweep"


class EntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Entry

    posting = factory.SubFactory(PostingFactory)
    account = factory.SubFactory(AccountFactory)
    side = Entry.Side.DEBIT
    amount = 1_000_000


class ReconcileRunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReconcileRun

    chain_id = BASE
    block_number = 1000
    block_hash = "0x" + "ab" * 32


class ReconcileStartFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ReconcileStart

    chain_id = 31337
    after_posting_id = 0
    reason = "the devnet started again from block 0"


class BalanceTransactionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BalanceTransaction

    key = factory.Sequence(lambda n: f"payment:txn_test{n}")
    organization_id = "org_test"
    type = BalanceTransaction.Type.PAYMENT
    chain_id = BASE
    token_address = USDC_BASE
    gross = 4_000_000
    fee = 48_000
    net = 3_952_000
    source_id = factory.Sequence(lambda n: f"txn_test{n}")


# --- merchant -----------------------------------------------------------------------------------


class ProductFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Product

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"Product {n}")
    amount = 4_000_000
    token_address = USDC_BASE
    chain_id = BASE
    recipient_address = RECIPIENT


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer

    organization = factory.SubFactory(OrganizationFactory)
    wallet_address = factory.Sequence(lambda n: address(0x1000 + n).lower())


class RevenueDayFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RevenueDay

    organization = factory.SubFactory(OrganizationFactory)
    day = factory.LazyFunction(lambda: timezone.now().date())
    chain_id = BASE
    token_address = USDC_BASE


def _logo_png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGBA", (8, 8), (31, 79, 209, 255)).save(out, format="PNG")
    return out.getvalue()


class OrganizationLogoFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = OrganizationLogo

    organization = factory.SubFactory(OrganizationFactory)
    image = factory.LazyFunction(_logo_png)
    digest = factory.LazyAttribute(lambda o: hashlib.sha256(o.image).hexdigest())
    width = 8
    height = 8


# --- orders -------------------------------------------------------------------------------------


class CheckoutSessionFactory(factory.django.DjangoModelFactory):
    """A session of the order interface (a UUID id; its order names the token and the recipient)."""

    class Meta:
        model = CheckoutSession

    id = factory.LazyFunction(lambda: str(uuid.uuid4()))
    created_through = CheckoutSession.CreatedThrough.ORDER_INTERFACE
    expires_at = later(minutes=30)


class OrderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Order

    type = Order.Type.X402_SWAP
    recipient_address = RECIPIENT
    global_address = factory.Sequence(lambda n: address(0x2000 + n))
    src_chain = BASE
    dst_chain = BASE
    src_token_address = USDC_BASE
    dst_token_address = USDC_BASE
    src_amount = 1_000_000
    expired_at = later(minutes=15)


class OrderBodyFactory(factory.django.DjangoModelFactory):
    """An order's stored API body, as orders.bodies renders it."""

    class Meta:
        model = OrderBody

    order = factory.SubFactory(OrderFactory)
    body = factory.LazyAttribute(
        lambda row: json.dumps(
            order_detail_data(OrderWithTransactions(order=row.order)), cls=DjangoJSONEncoder
        )
    )


class DepositTxFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DepositTx

    order = factory.SubFactory(OrderFactory)
    chain = factory.SelfAttribute("order.src_chain")
    tx_hash = factory.Sequence(lambda n: tx_hash(0x3000 + n))
    amount = factory.SelfAttribute("order.src_amount")


class RelayTxFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RelayTx

    order = factory.SubFactory(OrderFactory)
    chain = factory.SelfAttribute("order.dst_chain")
    tx_hash = factory.Sequence(lambda n: tx_hash(0x4000 + n))


class RefundTxFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RefundTx

    order = factory.SubFactory(OrderFactory)
    chain = factory.SelfAttribute("order.src_chain")
    tx_hash = factory.Sequence(lambda n: tx_hash(0x5000 + n))
    amount = factory.SelfAttribute("order.src_amount")
    status = RefundTx.Status.SUCCESS


class OrderStatusChangeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = OrderStatusChange

    order = factory.SubFactory(OrderFactory)
    from_status = "scanning_deposit_transaction"
    to_status = "quoting_after_deposit"


class SolverAllowanceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SolverAllowance

    chain_id = BASE
    token = USDC_BASE
    spender = factory.Sequence(lambda n: address(0x6000 + n))


class InventoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Inventory

    chain_id = BASE
    token = factory.Sequence(lambda n: address(0x7000 + n))
    low_mark = 50_000_000
    target = 200_000_000
    max_order = 20_000_000
    max_outstanding = 100_000_000
    refill_chain_id = BASE
    refill_token = USDC_BASE.lower()


class ExposureLimitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ExposureLimit

    chain_id = BASE
    token = factory.Sequence(lambda n: address(0x7800 + n))
    max_payment = 50_000_000
    max_per_payer = 100_000_000
    max_outstanding = 250_000_000


class FastFillFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FastFill

    order = factory.SubFactory(OrderFactory)
    request_id = factory.Sequence(lambda n: f"0x{n:064x}")
    chain_id = BASE
    token = USDC_BASE.lower()
    amount = 10_000_000
    deposit_tx = factory.SubFactory(OutboxTxFactory, signer="vault")


class InventoryFrontFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InventoryFront

    inventory = factory.SubFactory(InventoryFactory)
    order = factory.SubFactory(OrderFactory)
    amount = 9_900_000
    tx = factory.SubFactory(OutboxTxFactory, signer="solver")


class InventoryRefillFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InventoryRefill

    inventory = factory.SubFactory(InventoryFactory)
    amount = 150_000_000


# --- quickpay -----------------------------------------------------------------------------------


class QuickPaymentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = QuickPayment

    organization = factory.SubFactory(OrganizationFactory)
    amount = 2_500_000
    token_address = USDC_BASE
    chain_id = BASE
    recipient_address = RECIPIENT
    deposit_address = factory.Sequence(lambda n: address(0x7000 + n))
    expires_at = later(minutes=15)


class QuickPaymentDepositFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = QuickPaymentDeposit

    payment = factory.SubFactory(QuickPaymentFactory)
    deposit = factory.SubFactory(
        DepositFactory,
        to_address=factory.SelfAttribute("..payment.deposit_address"),
        owner=factory.LazyAttribute(lambda d: f"quick_payment:{d.factory_parent.payment.pk}"),
    )
    counted = factory.SelfAttribute("payment.amount")


# --- webhooks -----------------------------------------------------------------------------------


class WebhookEndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WebhookEndpoint

    organization = factory.SubFactory(OrganizationFactory)
    url = factory.Sequence(lambda n: f"https://hooks{n}.example/receive")
    secret_encrypted = factory.LazyFunction(lambda: encrypt_secret("whsec_" + "s" * 32))


class WebhookEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WebhookEvent

    organization = factory.SubFactory(OrganizationFactory)
    event_type = "payment.completed"


class WebhookDeliveryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WebhookDelivery

    endpoint = factory.SubFactory(WebhookEndpointFactory)
    event_type = "payment.completed"


class WebhookAttemptFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WebhookAttempt

    delivery = factory.SubFactory(WebhookDeliveryFactory)
    number = 1


class NotificationEmailFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NotificationEmail

    organization = factory.SubFactory(OrganizationFactory)
    event_type = "payment.completed"
    subject = "Payment received"
    to_address = factory.LazyAttribute(lambda e: e.organization.contact_email)


class NotificationSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = NotificationSettings
        django_get_or_create = ("organization",)

    organization = factory.SubFactory(OrganizationFactory)


# --- checkout -----------------------------------------------------------------------------------


class PaymentLinkFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PaymentLink

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"Link {n}")
    amount = 4_000_000
    token_address = USDC_BASE
    chain_id = BASE
    recipient_address = RECIPIENT


class PaymentLinkItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PaymentLinkItem

    payment_link = factory.SubFactory(PaymentLinkFactory)
    name = factory.Sequence(lambda n: f"Item {n}")
    amount = 1_000_000


class DiscountCodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DiscountCode

    organization = factory.SubFactory(OrganizationFactory)
    code = factory.Sequence(lambda n: f"SAVE{n}")
    type = DiscountCode.Type.PERCENTAGE
    value = 10


class WidgetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Widget

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"Widget {n}")
    widget_type = Widget.Type.CHECKOUT
    config = factory.LazyFunction(
        lambda: {"destination_chain_id": BASE, "destination_token": USDC_BASE, "recipient_address": RECIPIENT}
    )


class WidgetEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WidgetEvent

    widget = factory.SubFactory(WidgetFactory)
    kind = WidgetEvent.Kind.VIEW


class PlatformCheckoutSessionFactory(factory.django.DjangoModelFactory):
    """A session for an amount; `payment_link=` makes it a link's (its organization, token and price)."""

    class Meta:
        model = CheckoutSession

    organization = factory.LazyAttribute(
        lambda s: s.payment_link.organization if s.payment_link else OrganizationFactory()
    )
    payment_link = None
    token_address = USDC_BASE
    chain_id = BASE
    recipient_address = RECIPIENT
    amount = 4_000_000
    expires_at = later(minutes=30)


class SessionOrderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = SessionOrder

    session = factory.SubFactory(PlatformCheckoutSessionFactory)
    order = factory.SubFactory(OrderFactory, owner="checkout", fixed_price=True)


class TransactionFactory(factory.django.DjangoModelFactory):
    """A payment record; give `session=` / `payment_link=` when the test is about them."""

    class Meta:
        model = Transaction

    organization = factory.SubFactory(OrganizationFactory)
    session = None
    payment_link = None
    order_id = factory.LazyFunction(uuid.uuid4)
    chain_id = BASE
    to_address = RECIPIENT
    token_address = USDC_BASE
    amount = 4_000_000
    source_chain_id = factory.SelfAttribute("chain_id")
    source_token_address = factory.SelfAttribute("token_address")
    source_amount = factory.SelfAttribute("amount")


# --- refunds ------------------------------------------------------------------------------------


class RefundFactory(factory.django.DjangoModelFactory):
    """A refund awaiting its funding by deposit, of a completed transaction."""

    class Meta:
        model = Refund

    organization = factory.SubFactory(OrganizationFactory)
    payment_id = factory.LazyAttribute(
        lambda r: (
            TransactionFactory(organization=r.organization, status="completed", from_address=address(0x51)).pk
        )
    )
    amount = 1_000_000
    chain_id = BASE
    token_address = USDC_BASE
    funding_method = Refund.Funding.DEPOSIT
    funding_address = factory.Sequence(lambda n: address(0x7800 + n))
    expires_at = later(hours=24)
    destination_chain_id = BASE
    destination_token_address = USDC_BASE
    destination_address = address(0x51)
    destination_amount = factory.SelfAttribute("amount")


class RefundDepositFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RefundDeposit

    refund = factory.SubFactory(RefundFactory)
    deposit = factory.SubFactory(
        DepositFactory,
        to_address=factory.SelfAttribute("..refund.funding_address"),
        owner=factory.LazyAttribute(lambda d: f"refund:{d.factory_parent.refund.pk}"),
    )
    counted = factory.SelfAttribute("refund.amount")


class RefundBalanceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RefundBalance

    organization = factory.SubFactory(OrganizationFactory)
    chain_id = BASE
    token_address = USDC_BASE
    amount = 5_000_000


class RefundTopUpFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RefundTopUp

    organization = factory.SubFactory(OrganizationFactory)
    chain_id = BASE
    token_address = USDC_BASE
    deposit_address = factory.Sequence(lambda n: address(0x7900 + n))
    expires_at = later(hours=24)


class RefundTopUpDepositFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RefundTopUpDeposit

    top_up = factory.SubFactory(RefundTopUpFactory)
    deposit = factory.SubFactory(
        DepositFactory,
        to_address=factory.SelfAttribute("..top_up.deposit_address"),
        owner=factory.LazyAttribute(lambda d: f"refund:{d.factory_parent.top_up.pk}"),
    )
    counted = 1_000_000


class RefundWithdrawalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RefundWithdrawal

    organization = factory.SubFactory(OrganizationFactory)
    chain_id = BASE
    token_address = USDC_BASE
    amount = 1_000_000
    address = address(0x52)
    requested_by = "member:mem_test"


class LinkVisitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LinkVisit

    payment_link = factory.SubFactory(PaymentLinkFactory)


# --- onramp -------------------------------------------------------------------------------------


class VendorBEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = VendorBEvent

    event_id = factory.Sequence(lambda n: f"evt_{n:024d}")
    type = "payment_intent.succeeded"


# --- dashboard ----------------------------------------------------------------------------------


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "auth.User"
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"member{n}@shop.example")
    email = factory.SelfAttribute("username")
    password = factory.django.Password("correct horse battery staple 42")


class MemberFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Member

    user = factory.SubFactory(UserFactory)
    organization = factory.SubFactory(OrganizationFactory)
    role = Role.VIEWER


class RecoveryCodesFactory(factory.django.DjangoModelFactory):
    """A member's set of recovery codes (a django-otp device); its codes are RecoveryCodeFactory rows."""

    class Meta:
        model = RecoveryCodes

    user = factory.SubFactory(UserFactory)
    name = "recovery codes"
    confirmed = True


class RecoveryCodeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RecoveryCode

    device = factory.SubFactory(RecoveryCodesFactory)
    digest = factory.Sequence(lambda n: recovery_digest(f"{n:05d}-abcde"))


class InvitationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Invitation

    organization = factory.SubFactory(OrganizationFactory)
    email = factory.Sequence(lambda n: f"invited{n}@shop.example")
    role = Role.DEVELOPER
    token_digest = factory.Sequence(lambda n: hashlib.sha256(f"token-{n}".encode()).hexdigest())
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=72))


# --- facilitator: payment by signature ------------------------------------------------------------------


class SettlementFactory(factory.django.DjangoModelFactory):
    """An x402 authorization asked to be settled: 1 USDC on Base from a payer to a recipient."""

    class Meta:
        model = Settlement

    organization = factory.SubFactory(OrganizationFactory)
    x402_version = 2
    chain_id = BASE
    token = USDC_BASE
    payer = factory.Sequence(lambda n: address(0xF0000 + n))
    pay_to = RECIPIENT
    value = 1_000_000
    valid_after = 0
    valid_before = 2_000_000_000
    nonce = factory.Sequence(lambda n: tx_hash(0xF1000 + n))
    signature = "0x" + "11" * 65


class PayerTurnFactory(factory.django.DjangoModelFactory):
    """The turn an x402 payer's settlements of a token take one after another."""

    class Meta:
        model = PayerTurn

    chain_id = BASE
    token = USDC_BASE
    payer = factory.Sequence(lambda n: address(0xF2000 + n))
