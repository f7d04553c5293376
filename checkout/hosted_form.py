"""The hosted page's form: what a payer typed, checked as the page asks it, with a message beside each field.

A Django form built from what the page shows (the link's price or a typed amount, the merchant's form
fields, shipping options and address, the tokens the payer may pay with), beside the platform API's
serializers and the dashboard's forms. The template draws the inputs itself; the form reads them by the
same names (`amount`, `field_<id>`, `field_<id>_<part>` for an address, `shipping_option`, `ship_<part>`,
`discount_code`, `pay_with`) and answers `values()` for the session and `messages()` for the page, keyed by
the input each message sits beside.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms
from django.utils.translation import gettext as _

from checkout.display import parse_units
from core.emails import is_email

ADDRESS_PARTS = ("line1", "line2", "city", "state", "zip", "country")
TEXT_LIMIT = 500


class _Text(forms.CharField):
    """Optional, stripped, cut at `limit` characters (a longer answer is kept cut, not refused)."""

    def __init__(self, *, limit: int = TEXT_LIMIT) -> None:
        super().__init__(required=False)
        self.limit = limit

    def to_python(self, value: Any) -> str:
        return (super().to_python(value) or "")[: self.limit]


class _Address(forms.MultiValueField):
    """An address as six inputs, `<name>_line1` ... `<name>_country`, read as one dict."""

    def __init__(self) -> None:
        widget = forms.MultiWidget(
            widgets={part: forms.TextInput for part in ADDRESS_PARTS}
        )  # `<name>_<part>`
        fields = [_Text(limit=200) for _ in ADDRESS_PARTS]
        super().__init__(fields=fields, widget=widget, required=False, require_all_fields=False)

    def compress(self, data_list: list[str]) -> dict[str, str]:
        data_list = list(data_list) or [""] * len(ADDRESS_PARTS)
        return dict(zip(ADDRESS_PARTS, data_list, strict=True))


class HostedCheckoutForm(forms.Form):
    discount_code = _Text(limit=50)
    pay_with = forms.CharField(required=False)

    def __init__(self, data: Any, *, context: dict[str, Any]) -> None:
        super().__init__(data)
        self.context = context
        if context["fixed_amount"] is None:
            self.fields["amount"] = forms.CharField(required=False)
        for field in context["form_fields"]:
            name = f"field_{field['id']}"
            if field["type"] == "address":
                self.fields[name] = _Address()
            elif field["type"] == "checkbox":
                self.fields[name] = forms.CharField(required=False, strip=False)
            else:
                self.fields[name] = _Text()
        if context["shipping_options"]:
            self.fields["shipping_option"] = forms.CharField(required=False)
        if context["collect_shipping_address"]:
            self.fields["ship"] = _Address()
        for name in ("discount_code", "pay_with"):  # in the page's order, as the messages are listed
            self.fields[name] = self.fields.pop(name)

    def clean_amount(self) -> int | None:
        typed = self.cleaned_data["amount"]
        if "," in typed and "." not in typed:  # a decimal comma (es: 4,5)
            typed = typed.replace(",", ".")
        token = self.context["token"]
        amount = parse_units(typed, token.decimals if token else 0)
        if amount is None:
            raise forms.ValidationError(_("Enter an amount greater than zero."))
        return amount

    def clean_pay_with(self) -> tuple[int, str]:
        chosen = self.cleaned_data["pay_with"]
        if not any(option["value"] == chosen for option in self.context["pay_with"]):
            raise forms.ValidationError(_("Choose the token you pay with."))
        chain_id, _colon, address = chosen.partition(":")
        return int(chain_id), address

    def clean_shipping_option(self) -> dict[str, Any]:
        options = {option["id"]: option for option in self.context["shipping_options"]}
        chosen = options.get(self.cleaned_data["shipping_option"])
        if chosen is None:
            raise forms.ValidationError(_("Choose a shipping option."))
        return {key: value for key, value in chosen.items() if key != "display"}

    def clean_ship(self) -> dict[str, str]:
        address = self.cleaned_data["ship"]
        if not address["line1"] or not address["city"]:
            raise forms.ValidationError(_("Enter the shipping address (street and city)."))
        return address

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for field in self.context["form_fields"]:
            name = f"field_{field['id']}"
            answer = cleaned.get(name)
            if field["type"] == "checkbox":
                answer = cleaned[name] = answer == "on"
            message = _answer_refused(field, answer)
            if field.get("required") and (not answer or (field["type"] == "address" and not answer["line1"])):
                message = _("%(field)s is required.") % {"field": field["label"]}
            if message:
                self.add_error(name, message)
        return cleaned

    def messages(self) -> dict[str, str]:
        """The first message of each input that has one, keyed by the input it is shown beside."""
        errors = self.errors
        return {
            ("ship_line1" if name == "ship" else name): str(errors[name][0])
            for name in self.fields
            if name in errors
        }

    def values(self) -> dict[str, Any]:
        """What the session is made of: the amount (if typed), the answers, the email, shipping, the code and
        the token paid with."""
        cleaned = self.cleaned_data
        values: dict[str, Any] = {"form_data": {}, "email": ""}
        if "amount" in self.fields:
            values["amount"] = cleaned["amount"]
        for field in self.context["form_fields"]:
            answer = cleaned[f"field_{field['id']}"]
            values["form_data"][field["id"]] = answer
            if field["type"] == "email" and answer and not values["email"]:
                values["email"] = answer
        values["shipping_option"] = cleaned.get("shipping_option")
        values["shipping_address"] = cleaned.get("ship")
        values["discount_code"] = cleaned["discount_code"]
        values["pay_with"] = cleaned["pay_with"]
        return values


def _answer_refused(field: dict[str, Any], answer: Any) -> str:
    """Why a typed answer does not fit its field's type ("" when it does, or when nothing was typed)."""
    if not answer or field["type"] in ("address", "checkbox"):
        return ""
    if field["type"] == "email" and not is_email(answer):
        return _("Enter an email address.")
    if field["type"] == "number":
        try:
            Decimal(answer)
        except InvalidOperation:
            return _("Enter a number.")
    if field["type"] == "select" and answer not in field.get("options", []):
        return _("Choose one of the options.")
    return ""
