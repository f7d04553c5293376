"""Refunds in the dashboard: refund a payment (all or part of it, a reason, another address on the same chain
and token), fund it from the member's browser wallet (the hosted page's wallet script: connect, switch chain,
one transfer) or from the refund balance, follow it to the payer, cancel it before it is funded; the list of
the organization's refunds. Through the API's serializers and services (refunds), audited as the member.

The service's fee is not returned: the merchant refunds from what they received.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from chains.evm import is_address, to_checksum_address
from chains.registry import chain_get
from checkout.display import (
    display_token,
    format_units,
    payable_tokens,
    qr_svg,
    transfer_uri,
    wallet_add_chain,
    wallet_messages,
)
from checkout.models import Transaction
from checkout.receipts import explorer_link, short_hash
from core.errors import DomainError
from dashboard.amounts import chain_name, token_amount
from dashboard.auth import SignInRefused, member_view, owned, prove
from dashboard.forms import ApiForm, submitted, token_options
from dashboard.members import refund_withdrawal_announced
from dashboard.pages import payment_page
from dashboard.refund_parts import REASONS, RefundForm, refund_rows
from dashboard.roles import ADMIN, WRITE
from orders.fees import fee_amount
from orders.models import Order
from platform_api.context import RequestContext
from refunds import selectors, services
from refunds.models import Refund, RefundBalance, RefundTopUp, RefundWithdrawal

FLASH = "dashboard_refund_flash"
PAGE_SIZE = 50


@require_POST
@member_view(WRITE)
def refund_create(request: HttpRequest, transaction_id: str) -> HttpResponse:
    txn = owned(Transaction.objects.all(), request, transaction_id, "payment")
    form = RefundForm(request.POST)
    organization = request.organization  # type: ignore[attr-defined]
    done = submitted(
        request,
        form,
        body=lambda: form.body(txn),
        write=lambda ctx, data: services.refund_create(ctx=ctx, organization=organization, data=data).id,
        done=lambda request, made: redirect("dashboard:refund", made),
        once=True,
    )
    if done is not None:
        return done
    return payment_page(request, txn, refund_form=form, status=400)


def _wallet(refund: Refund) -> dict | None:
    """The wallet script's facts for funding `refund` from the member's browser wallet (refunds/wallet.js)."""
    chain = chain_get(refund.chain_id)
    token = display_token(refund.chain_id, refund.token_address)
    if (
        refund.status != Refund.Status.REQUIRES_FUNDING
        or not refund.funding_address
        or chain is None
        or token is None
    ):
        return None
    messages = wallet_messages() | {
        "payWith": "Fund it with {wallet}",
        "nothingOwed": "This refund is funded: nothing more to send.",
        "sent": "Sent. The refund is funded once the transfer is confirmed; this page follows it.",
    }
    return {
        "sessionId": refund.id,
        "statusUrl": reverse("dashboard:refund-owed", args=[refund.id]),
        "plainStatus": True,
        "chainId": chain.chain_id,
        "chainName": chain.name,
        "nativeSymbol": chain.native_symbol,
        "token": refund.token_address,
        "native": False,
        "deposit": refund.funding_address,
        "decimals": token.decimals,
        "symbol": token.symbol,
        "explorerUrl": chain.explorer_url or "",
        "addChain": wallet_add_chain(chain),
        "messages": messages,
    }


@require_GET
@member_view()
def refund(request: HttpRequest, refund_id: str) -> HttpResponse:
    found = owned(Refund.objects.all(), request, refund_id, "refund")
    owed = int(found.amount) - int(found.funding_received)
    hashes = [
        {
            "kind": h["kind"],
            "chain": chain_name(h["chain_id"]),
            "hash": h["tx_hash"],
            "short": short_hash(h["tx_hash"]),
            "url": explorer_link(h["chain_id"], h["tx_hash"]),
        }
        for h in found.tx_hashes
    ]
    context = {
        "refund": found,
        "amount": token_amount(found.chain_id, found.token_address, found.amount),
        "owed": token_amount(found.chain_id, found.token_address, owed),
        "owed_units": owed,
        "owed_figure": _figure(found.chain_id, found.token_address, owed),
        "funding_qr": qr_svg(
            transfer_uri(
                chain_id=found.chain_id,
                token_address=found.token_address,
                to=found.funding_address,
                amount=owed,
            )
        )
        if found.status == Refund.Status.REQUIRES_FUNDING and found.funding_address
        else "",
        "status_label": STATUS_LABELS.get(found.status, found.status),
        "delivered": token_amount(
            found.destination_chain_id, found.destination_token_address, found.destination_amount
        ),
        "quoted": token_amount(
            found.destination_chain_id, found.destination_token_address, found.destination_quoted
        )
        if found.destination_quoted is not None
        else None,
        "chain": chain_name(found.chain_id),
        "destination_chain": chain_name(found.destination_chain_id),
        "hashes": hashes,
        "wallet": _wallet(found),
        "is_transaction": found.payment_id.startswith("txn_"),
        "reason": dict(REASONS).get(found.reason, ""),
        "fee": _fee(found),
        "flash": request.session.pop(FLASH, None),
        "nav": "refunds",
        "member": request.member,  # type: ignore[attr-defined]
    }
    template = (
        "dashboard/_refund_state.html" if request.headers.get("HX-Request") else "dashboard/refund.html"
    )
    return render(request, template, context)


# The refund's status as a merchant reads it (the API's value stays in the badge's class and data-status).
STATUS_LABELS = {
    Refund.Status.REQUIRES_FUNDING: "Awaiting your funding",
    Refund.Status.PENDING: "Funded: on its way to the payer",
    Refund.Status.SUCCEEDED: "Succeeded: the payer has it",
    Refund.Status.FAILED: "Failed",
    Refund.Status.CANCELED: "Canceled",
}


def _figure(chain_id: int, token_address: str, amount: int) -> str:
    """`amount` as the decimal figure a wallet is typed (what the copy button copies)."""
    token = display_token(chain_id, token_address)
    return format_units(amount, token.decimals) if token else str(amount)


def _fee(refund: Refund) -> str | None:
    """The service's fee on a refund delivered by an order (another chain or token), in the merchant's token:
    taken from the refund's amount, never added to it."""
    if refund.order_id is None:
        return None
    order = Order.objects.filter(pk=refund.order_id).only("fee").first()
    bps = int(((order.fee if order else None) or {}).get("finalFeeBps") or 0)
    return token_amount(refund.chain_id, refund.token_address, fee_amount(int(refund.amount), bps))


@require_GET
@member_view()
def refund_owed(request: HttpRequest, refund_id: str) -> JsonResponse:
    """What the wallet script still has to send: `{remaining}`, null once the refund awaits no funding."""
    found = owned(Refund.objects.all(), request, refund_id, "refund")
    remaining = int(found.amount) - int(found.funding_received)
    awaiting = found.status == Refund.Status.REQUIRES_FUNDING and remaining > 0
    return JsonResponse({"remaining": str(remaining) if awaiting else None})


@require_POST
@member_view(WRITE)
def refund_cancel(request: HttpRequest, refund_id: str) -> HttpResponse:
    found = owned(Refund.objects.all(), request, refund_id, "refund")
    if found.status == Refund.Status.REQUIRES_FUNDING:
        services.refund_cancel(ctx=RequestContext.for_member(request, request.member), refund=found)  # type: ignore[attr-defined]
        request.session[FLASH] = "The refund is canceled. Anything sent toward it goes back to its sender."
    else:
        request.session[FLASH] = (
            f"The refund is {found.status}: only a refund awaiting funding can be canceled."
        )
    return redirect("dashboard:refund", found.id)


@require_GET
@member_view()
def refunds(request: HttpRequest) -> HttpResponse:
    """The organization's refunds, the refund balance, its top-ups and (admins) its withdrawal."""
    return _refunds_page(request)


# --- the refund balance: top-ups and withdrawals --------------------------------------------------------


@require_POST
@member_view(WRITE)
def top_up_create(request: HttpRequest) -> HttpResponse:
    """A deposit address that tops the refund balance up in the token chosen."""
    chain, _, address = request.POST.get("token", "").partition(":")
    if request.POST.get("token", "") not in {option["value"] for option in payable_tokens()}:
        request.session[FLASH] = "Choose the token to top the balance up in."
        return redirect("dashboard:refunds")
    member = request.member  # type: ignore[attr-defined]
    top_up = services.refund_top_up_create(
        ctx=RequestContext.for_member(request, member),
        organization=request.organization,  # type: ignore[attr-defined]
        chain_id=int(chain),
        token_address=address,
    )
    return redirect("dashboard:refund-top-up", top_up.id)


@require_GET
@member_view()
def top_up(request: HttpRequest, top_up_id: str) -> HttpResponse:
    found = owned(RefundTopUp.objects.all(), request, top_up_id, "top-up")
    token = display_token(found.chain_id, found.token_address)
    return render(
        request,
        "dashboard/refund_top_up.html",
        {
            "member": request.member,  # type: ignore[attr-defined]
            "top_up": found,
            "symbol": token.symbol if token else found.token_address,
            "chain": chain_name(found.chain_id),
            "credited": token_amount(found.chain_id, found.token_address, found.credited),
            "nav": "refunds",
        },
    )


class WithdrawalForm(ApiForm):
    FIELDS = ("balance", "amount", "address")

    def body(self, organization) -> dict | None:
        chain, _, token_address = self.text("balance").partition(":")
        row = (
            RefundBalance.objects.filter(
                organization=organization, chain_id=int(chain), token_address__iexact=token_address
            ).first()
            if chain.isdigit()
            else None
        )
        if row is None:
            self.refuse("balance", "Choose one of your refund balances.")
            return None
        token = display_token(row.chain_id, row.token_address)
        amount = self.units("amount", token, required=True)
        if amount is not None and amount > int(row.amount):
            held = token_amount(row.chain_id, row.token_address, row.amount)
            self.refuse("amount", f"The refund balance holds {held}.")
        address = self.text("address")
        if not is_address(address):
            self.refuse(
                "address", "Enter the address to send it to: 0x followed by 40 hexadecimal characters."
            )
        if self.errors or amount is None:
            return None
        return {
            "chain_id": row.chain_id,
            "token_address": row.token_address,
            "amount": amount,
            "address": to_checksum_address(address),
            "shown": f"{format_units(amount, token.decimals)} {token.symbol}" if token else f"{amount} units",
            "chain": chain_name(row.chain_id),
        }


def _refunds_page(
    request: HttpRequest, *, withdrawal_form: WithdrawalForm | None = None, confirm=None, status=200
):
    organization = request.organization  # type: ignore[attr-defined]
    state = request.GET.get("status", "")
    found = selectors.refund_list(
        organization=organization, status=state if state in Refund.Status.values else None
    )
    page = Paginator(found.order_by("-created_at", "-id"), PAGE_SIZE).get_page(request.GET.get("page"))
    rows = list(selectors.refund_balances(organization=organization))
    return render(
        request,
        "dashboard/refunds.html",
        {
            "member": request.member,  # type: ignore[attr-defined]
            "rows": refund_rows(page.object_list),
            "page": page,
            "status": state,
            "statuses": [(value, value.replace("_", " ")) for value in Refund.Status.values],
            "balances": [
                {
                    "value": f"{b.chain_id}:{b.token_address}",
                    "chain": chain_name(b.chain_id),
                    "amount": token_amount(b.chain_id, b.token_address, b.amount),
                }
                for b in rows
            ],
            "tokens": token_options(),
            "withdrawal_form": withdrawal_form or WithdrawalForm(),
            "confirm": confirm,
            "verified": request.user.is_verified(),  # type: ignore[attr-defined]
            "withdrawals": [
                {
                    "id": w.id,
                    "status": w.status,
                    "amount": token_amount(w.chain_id, w.token_address, w.amount),
                    "address": w.address,
                }
                for w in RefundWithdrawal.objects.filter(organization=organization).order_by("-created_at")[
                    :20
                ]
            ],
            "flash": request.session.pop(FLASH, None),
            "nav": "refunds",
        },
        status=status,
    )


@require_POST
@member_view(ADMIN)
def withdraw(request: HttpRequest) -> HttpResponse:
    """Withdraw from the refund balance: a second factor first; then the member confirms the address and the
    amount on a second step, and only that confirmed step sends anything."""
    if not request.user.is_verified():  # type: ignore[attr-defined]
        request.session[FLASH] = "Turn on two-factor sign-in to withdraw from the refund balance."
        return redirect("dashboard:refunds")
    organization = request.organization  # type: ignore[attr-defined]
    form = WithdrawalForm(request.POST)
    data = form.body(organization)
    if data is None:
        return _refunds_page(request, withdrawal_form=form, status=400)
    if request.POST.get("confirmed") != data["address"]:  # the address the member saw and confirmed
        return _refunds_page(request, withdrawal_form=form, confirm=data)
    # A fresh second factor for this withdrawal itself: a signed-in session alone (a stolen cookie) sends
    # nothing.
    try:
        proven = prove(request, request.member, request.POST.get("code", ""))  # type: ignore[attr-defined]
    except SignInRefused as refused:
        data["code_error"] = f"Too many wrong codes. Try again in {refused.retry_after} s."
        return _refunds_page(request, withdrawal_form=form, confirm=data, status=429)
    if proven is None:
        data["code_error"] = (
            "Enter the current code from your authenticator (or a recovery code). Each code is accepted once: "
            "if you just used it, wait for the next one."
        )
        return _refunds_page(request, withdrawal_form=form, confirm=data, status=400)
    try:
        withdrawal = services.refund_balance_withdraw(
            ctx=RequestContext.for_member(request, request.member),  # type: ignore[attr-defined]
            organization=organization,
            chain_id=data["chain_id"],
            token_address=data["token_address"],
            amount=data["amount"],
            address=data["address"],
        )
    except DomainError as exc:
        form.refused(exc)
        return _refunds_page(request, withdrawal_form=form, status=400)
    refund_withdrawal_announced(
        organization,
        shown=data["shown"],
        chain=data["chain"],
        address=data["address"],
        withdrawal_id=withdrawal.id,
        actor=withdrawal.requested_by,
    )
    request.session[FLASH] = (
        f"Withdrawal {withdrawal.id}: {data['shown']} on its way to {data['address']}. Every owner was emailed."
    )
    return redirect("dashboard:refunds")
