"""The dashboard's forms: the values as the member typed them, checked by the API's own serializers and
services, and every refusal shown beside the field it is about.

A form never validates on its own terms: it turns what was typed into the API's body (a price typed as
`9.99` becomes token units, a token picked from the list becomes `chain_id` and `token_address`), hands it
to the API's serializer, and maps the serializer's or the service's errors back onto its fields. So a
dashboard write accepts and refuses exactly what the API does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from chains.models import Token
from checkout.display import display_token, format_units, payable_tokens
from core.errors import DomainError
from dashboard.once import made_before, new_form_token, remember
from platform_api.context import RequestContext
from platform_api.errors import PlatformError

PLAIN_DECIMAL = re.compile(r"[0-9]{0,78}(\.[0-9]{1,78})?")  # no sign, no exponent, at most uint256's digits
NOT_SAVED = "Nothing was saved: please correct the fields marked below."


@dataclass(frozen=True)
class Shown:
    """What the `field` tag shows of a form checked by hand: its values and its errors, by field."""

    values: Mapping[str, Any]
    errors: Mapping[str, str]


def first_message(messages: Any) -> str:
    """The first message of a serializer error (a list, a dict of nested errors, or a string)."""
    while isinstance(messages, list | dict) and messages:
        messages = messages[0] if isinstance(messages, list) else next(iter(messages.values()))
    return str(messages)


class ApiForm:
    """A form of text fields. `FIELDS` names them; `ALIASES` maps an API field to the form field that
    carries it (the token picker carries both `chain_id` and `token_address`)."""

    FIELDS: tuple[str, ...] = ()
    ALIASES: Mapping[str, str] = {"chain_id": "pay_to", "token_address": "pay_to"}

    def __init__(self, post: Mapping[str, str] | None = None, initial: Mapping[str, Any] | None = None):
        source = post if post is not None else (initial or {})
        self.values: dict[str, str] = {
            name: "" if source.get(name) is None else str(source.get(name)) for name in self.FIELDS
        }
        self.errors: dict[str, str] = {}

    def text(self, name: str) -> str:
        return self.values[name].strip()

    def refuse(self, field: str | None, message: str) -> None:
        """An error beside `field` (an API field is mapped onto the form's), or above the form."""
        name = self.ALIASES.get(field or "", field or "")
        self.errors.setdefault(name if name in self.FIELDS else "form", message)

    def checked(self, serializer_class, body: dict[str, Any], *, partial: bool = False) -> dict | None:
        """The serializer's validated data, or None with the errors on their fields."""
        serializer = serializer_class(data=body, partial=partial)
        if not serializer.is_valid():
            for field, messages in serializer.errors.items():
                self.refuse(None if field == "non_field_errors" else field, first_message(messages))
        return None if self.errors else dict(serializer.validated_data)

    def refused(self, exc: DomainError | PlatformError) -> None:
        """A service's refusal, beside the field it names."""
        field = getattr(exc, "field", None) or getattr(exc, "param", None)
        self.refuse(
            str(field).split("[")[0].split(".")[0] if field else None, getattr(exc, "message", str(exc))
        )

    def token(self, name: str = "pay_to") -> Token | None:
        """The token picked in `name` (`chain_id:address` of a payable token), or None with its error."""
        chain, _, address = self.text(name).partition(":")
        if self.text(name) not in {option["value"] for option in payable_tokens()}:
            self.refuse(name, "Choose the token you are paid in.")
            return None
        return display_token(int(chain), address)

    def units(
        self, name: str, token: Token | None, *, required: bool = False, zero: bool = False
    ) -> int | None:
        """The amount typed in `name` (`9.99`, or `9,99`) in `token`'s smallest units; None when empty."""
        typed = self.text(name).replace(",", ".")
        if not typed:
            if required:
                self.refuse(name, "Enter an amount.")
            return None
        if token is None:
            self.refuse(name, "Choose the token first.")
            return None
        if not PLAIN_DECIMAL.fullmatch(typed) or (Decimal(typed) == 0 and not zero):
            self.refuse(name, "Enter an amount greater than zero, such as 25 or 9.99.")
            return None
        number = Decimal(typed)
        units = number.scaleb(token.decimals)
        if units != units.to_integral_value():
            self.refuse(name, f"At most {token.decimals} decimals for {token.symbol}.")
            return None
        if units >= 2**256:
            self.refuse(name, "That is more than a token amount can be.")
            return None
        return int(units)


def form_page(
    request: HttpRequest, template: str, form: ApiForm, *, nav: str, flash: str | None = None, **context: Any
) -> HttpResponse:
    """A page with a form: 400 when the form holds errors; a fresh one-time token; the flash kept under the
    session key `flash`, shown once."""
    return render(
        request,
        template,
        {
            "member": request.member,  # type: ignore[attr-defined]
            "form": form,
            "form_token": new_form_token(),
            "flash": request.session.pop(flash, None) if flash else None,
            "nav": nav,
            **context,
        },
        status=400 if form.errors else 200,
    )


def token_options() -> list[tuple[str, str]]:
    """The token picker's options: the payable tokens, after an empty choice."""
    return [("", "Choose a token…")] + [(option["value"], option["label"]) for option in payable_tokens()]


def submitted(
    request: HttpRequest,
    form: ApiForm,
    *,
    body: Callable[[], dict | None],
    write: Callable[[RequestContext, dict], str],
    done: Callable[[HttpRequest, str], HttpResponse],
    once: bool = False,
) -> HttpResponse | None:
    """Run a POSTed form: `body()` is the API's validated data (None: the form refused it), `write(ctx,
    data)` writes it through a service as the member and returns the id of what it wrote, and `done` is the
    page to go to then. None: show the form again, with its errors.

    With `once`, the form's one-time token makes a second submit land on what the first made."""
    if once and (made := made_before(request)):
        return done(request, made)
    try:
        data = body()
        made_id = None if data is None else write(RequestContext.for_member(request, request.member), data)
    except (DomainError, PlatformError) as exc:
        form.refused(exc)
        made_id = None
    if made_id is None or form.errors:
        form.errors.setdefault("form", NOT_SAVED)
        return None
    if once:
        remember(request, made_id)
    return done(request, made_id)


def to(view_name: str, *, flash: tuple[str, Any] | None = None) -> Callable[[HttpRequest, str], HttpResponse]:
    """`done` for `submitted`: the page of what was written, with `flash` = (session key, what it says)."""

    def done(request: HttpRequest, made_id: str) -> HttpResponse:
        if flash is not None:
            request.session[flash[0]] = flash[1]
        return redirect(view_name, made_id)

    return done


class PricedForm(ApiForm):
    """A form of something sold in a token (a payment link, a product): `pay_to` picks the token, `amount`
    is its price typed in the token's units (empty: the payer chooses), `recipient_address` who is paid."""

    @classmethod
    def of(cls, record) -> PricedForm:
        """The form filled with a saved record's values."""
        token = display_token(record.chain_id, record.token_address)
        amount = record.amount
        return cls(
            initial={name: getattr(record, name, "") for name in cls.FIELDS}
            | {
                "pay_to": f"{record.chain_id}:{record.token_address}",
                "amount": format_units(int(amount), token.decimals) if token and amount is not None else "",
            }
        )

    @classmethod
    def new(cls, organization) -> PricedForm:
        """An empty form with the organization's default token and recipient."""
        pay_to = ""
        if organization.default_chain_id and organization.default_token_address:
            pay_to = f"{organization.default_chain_id}:{organization.default_token_address}"
        return cls(initial={"recipient_address": organization.default_recipient_address, "pay_to": pay_to})

    def priced(self, *, editing: bool) -> dict[str, Any]:
        """The token, price and recipient as the API's body has them. Editing sends every field (an emptied
        price is "the payer chooses"); creating leaves out what is empty, for the organization's defaults."""
        token = self.token()
        amount = self.units("amount", token)
        body: dict[str, Any] = {}
        if token is not None:
            body |= {"chain_id": token.chain_id, "token_address": token.address}
        if self.text("recipient_address") or editing:
            body["recipient_address"] = self.text("recipient_address")
        if amount is not None or editing:
            body["amount"] = None if amount is None else str(amount)
        return body


def whole_number(text: str) -> int | str | None:
    """A typed whole number for the API (which refuses what is not one, beside the field); None if empty."""
    return (int(text) if text.isdigit() and len(text) < 12 else text) if text else None
