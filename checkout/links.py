"""Every write of payment links and their items.

Each create, update and delete records its audit event in the same
transaction. Deleting a link hides it from the API and expires its open
checkout sessions in the same transaction (`sessions.link_sessions_expire`).
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from checkout.models import PaymentLink, PaymentLinkItem
from checkout.serializers import PaymentLinkWriteSerializer
from checkout.sessions import link_sessions_expire
from core.errors import NOTHING_TO_UPDATE, Conflict, ErrorCode, InvalidRequest, NotFound
from merchant.api import check_product, fill_defaults
from merchant.models import Product
from platform_api.audit_names import AuditName
from platform_api.context import RequestContext
from platform_api.inputs import check_amounts_worth, check_token, stored_values
from platform_api.models import Organization
from platform_api.signals import record_write

AMOUNT_BOUNDS = ("min_amount", "max_amount", "suggested_amount")


LINK_FIELDS = (
    "name",
    "description",
    "token_address",
    "chain_id",
    "recipient_address",
    "amount",
    *AMOUNT_BOUNDS,
    "product_id",
    "image_url",
    "theme_color",
    "button_text",
    "max_uses",
    "expires_at",
    "form_schema",
    "shipping_options",
    "collect_shipping_address",
    "return_url",
    "return_label",
    "branding",
    "fee_on_top",
)


def _audit(
    ctx: RequestContext, event_type: AuditName, resource_type: str, resource_id: str, *, created: bool = False
) -> None:
    record_write(
        ctx=ctx,
        event_type=event_type,
        resource_type=resource_type,
        resource_id=resource_id,
        created=created,
    )


def check_link_amounts(values: dict[str, Any]) -> None:
    """A fixed `amount`, or a payer-chosen one within `min_amount` <= `suggested_amount` <= `max_amount`, none
    worth more than any payment."""
    check_amounts_worth(
        values["chain_id"],
        values["token_address"],
        {name: values.get(name) for name in ("amount", *AMOUNT_BOUNDS)},
    )
    if values.get("amount") is not None:
        for name in AMOUNT_BOUNDS:
            if values.get(name) is not None:
                raise InvalidRequest(
                    f"'{name}' is for a payer-chosen amount; omit it (or 'amount') for a fixed price.",
                    field=name,
                )
        return
    low, high, suggested = (values.get(name) for name in AMOUNT_BOUNDS)
    if low is not None and high is not None and low > high:
        raise InvalidRequest("'max_amount' must not be below 'min_amount'.", field="max_amount")
    if suggested is not None and (
        (low is not None and suggested < low) or (high is not None and suggested > high)
    ):
        raise InvalidRequest(
            "'suggested_amount' must lie between 'min_amount' and 'max_amount'.", field="suggested_amount"
        )


def _link_values(data: dict[str, Any]) -> dict[str, Any]:
    return stored_values(data, LINK_FIELDS)


def _create_items(link: PaymentLink, items: list[dict]) -> list[PaymentLinkItem]:
    for index, item in enumerate(items):
        check_product(link.organization, item.get("product_id"), f"items[{index}].product_id")
    return PaymentLinkItem.objects.bulk_create([PaymentLinkItem(payment_link=link, **item) for item in items])


def _save_new_link(organization: Organization, values: dict[str, Any]) -> PaymentLink:
    for _ in range(5):  # 62**8 codes: a collision is rare, and retried with another code
        try:
            with transaction.atomic():
                link = PaymentLink(organization=organization, **values)
                link.save(force_insert=True)
                return link
        except IntegrityError:
            continue
    raise RuntimeError(f"no free short code for a payment link of {organization.pk} after 5 tries")


@transaction.atomic
def payment_link_create(
    *, ctx: RequestContext, organization: Organization, data: dict[str, Any]
) -> PaymentLink:
    values = fill_defaults(organization, _link_values(data))
    check_token(values["chain_id"], values["token_address"])
    check_link_amounts(values)
    check_product(organization, values.get("product_id"))
    link = _save_new_link(organization, values)
    _create_items(link, list(data.get("items") or []))
    _audit(ctx, AuditName.PAYMENT_LINK_CREATED, "payment_link", link.id, created=True)
    return link


@transaction.atomic
def payment_link_update(*, ctx: RequestContext, link: PaymentLink, data: dict[str, Any]) -> PaymentLink:
    if not data:
        raise InvalidRequest(NOTHING_TO_UPDATE, code=ErrorCode.NOTHING_TO_UPDATE)
    values = _link_values(data)
    if "is_active" in data:
        values["is_active"] = data["is_active"]
    link = PaymentLink.objects.select_for_update().get(pk=link.pk)
    merged = {name: getattr(link, name) for name in LINK_FIELDS} | values
    if "amount" in values and values["amount"] is not None:  # a fixed price replaces the bounds
        merged.update(dict.fromkeys(AMOUNT_BOUNDS))
        values.update(dict.fromkeys(AMOUNT_BOUNDS))
    if "chain_id" in values or "token_address" in values:
        check_token(merged["chain_id"], merged["token_address"])
    check_link_amounts(merged)
    check_product(link.organization, values.get("product_id"))
    for name, value in values.items():
        setattr(link, name, value)
    link.updated_at = timezone.now()
    link.save()
    if "items" in data:  # a create field: the request's list replaces the link's items
        link.items.all().delete()
        _create_items(link, list(data["items"]))
    _audit(ctx, AuditName.PAYMENT_LINK_UPDATED, "payment_link", link.id)
    return link


@transaction.atomic
def payment_link_delete(*, ctx: RequestContext, link: PaymentLink) -> None:
    """The link leaves the API and can no longer be paid; its open checkouts expire. Its payments stay."""
    now = timezone.now()
    PaymentLink.objects.filter(pk=link.pk, deleted_at__isnull=True).update(
        deleted_at=now, is_active=False, updated_at=now
    )
    link_sessions_expire(link_id=link.pk)
    _audit(ctx, AuditName.PAYMENT_LINK_DELETED, "payment_link", link.id)


@transaction.atomic
def payment_link_duplicate(
    *, ctx: RequestContext, link: PaymentLink, overrides: dict[str, Any]
) -> PaymentLink:
    """A new link with the same fields and items; `overrides` replace fields, the name defaults to `Copy of ...`."""
    values = {name: getattr(link, name) for name in LINK_FIELDS}
    values["name"] = f"Copy of {link.name}"[:100]
    values |= _link_values(overrides)
    if overrides.get("amount") is not None:
        values.update(dict.fromkeys(AMOUNT_BOUNDS))
    check_token(values["chain_id"], values["token_address"])
    check_link_amounts(values)
    check_product(link.organization, values.get("product_id"))
    copy = _save_new_link(link.organization, values)
    items = overrides.get("items")
    if items is None:
        items = [
            {
                name: getattr(item, name)
                for name in (
                    "name",
                    "amount",
                    "quantity",
                    "description",
                    "image_url",
                    "sort_order",
                    "product_id",
                )
            }
            for item in link.items.all()
        ]
    _create_items(copy, list(items))
    _audit(ctx, AuditName.PAYMENT_LINK_CREATED, "payment_link", copy.id, created=True)
    return copy


@transaction.atomic
def payment_link_item_add(*, ctx: RequestContext, link: PaymentLink, data: dict[str, Any]) -> PaymentLinkItem:
    (item,) = _create_items(link, [data])
    PaymentLink.objects.filter(pk=link.pk).update(updated_at=timezone.now())
    _audit(ctx, AuditName.PAYMENT_LINK_UPDATED, "payment_link", link.id, created=True)
    return item


@transaction.atomic
def payment_link_item_delete(*, ctx: RequestContext, link: PaymentLink, item_id: str) -> None:
    if PaymentLinkItem.objects.filter(payment_link=link, pk=item_id).delete()[0] == 0:
        raise NotFound(f"No payment_link_item with id '{item_id}'.")
    PaymentLink.objects.filter(pk=link.pk).update(updated_at=timezone.now())
    _audit(ctx, AuditName.PAYMENT_LINK_UPDATED, "payment_link", link.id)


@transaction.atomic
def product_generate_link(*, ctx: RequestContext, product: Product, overrides: dict[str, Any]):
    """A payment link with the product's name, price, token, chain, recipient, image, form and shipping."""
    if not product.is_active:
        raise Conflict(
            f"product {product.id} is archived; it makes no new links.", code=ErrorCode.INVALID_STATE
        )
    data = {
        name: getattr(product, name)
        for name in (
            "name",
            "description",
            "amount",
            "token_address",
            "chain_id",
            "recipient_address",
            "image_url",
        )
    }
    data |= {
        "product_id": product.id,
        "form_schema": product.form_schema,
        "shipping_options": product.shipping_options,
    }
    serializer = PaymentLinkWriteSerializer(data={**_as_input(data), **overrides})
    serializer.is_valid(raise_exception=True)
    return payment_link_create(ctx=ctx, organization=product.organization, data=serializer.validated_data)


def _as_input(data: dict[str, Any]) -> dict[str, Any]:
    """Stored values as the link's API takes them (amounts as strings, no empty optional fields)."""
    result = {key: value for key, value in data.items() if value not in (None, "")}
    if "amount" in result:
        result["amount"] = str(result["amount"])
    if not (result.get("form_schema") or {}).get("fields"):
        result.pop("form_schema", None)
    return result
