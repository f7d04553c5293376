"""What other apps may ask of the merchant app: its public surface, with `models`, `signals` and `serializers`.

The rest (one module per resource, each with its serializers, service and views; the organization's settings;
branding; the revenue rollup; the admin and URLs) is the app's own: import-linter's "public surface" contract
refuses another app's import of it.
"""

from __future__ import annotations

from merchant.branding import DEFAULT_ACCENT, LogoError, brand_for, logo_from_upload, logo_image, logo_url
from merchant.customers import (
    CustomerUpdateSerializer,
    CustomerWriteSerializer,
    customer_create,
    customer_erase,
    customer_get,
    customer_list,
    customer_paid,
    customer_update,
)
from merchant.organization import (
    PAYOUT_FIELDS,
    OrganizationUpdateSerializer,
    fill_defaults,
    organization_branding_update,
    organization_update,
    payout_defaults,
)
from merchant.products import (
    ProductWriteSerializer,
    check_product,
    product_archive,
    product_create,
    product_get,
    product_list,
    product_update,
)
from merchant.revenue import revenue_record

__all__ = [
    "DEFAULT_ACCENT",
    "PAYOUT_FIELDS",
    "CustomerUpdateSerializer",
    "CustomerWriteSerializer",
    "LogoError",
    "OrganizationUpdateSerializer",
    "ProductWriteSerializer",
    "brand_for",
    "check_product",
    "customer_create",
    "customer_erase",
    "customer_get",
    "customer_list",
    "customer_paid",
    "customer_update",
    "fill_defaults",
    "logo_from_upload",
    "logo_image",
    "logo_url",
    "organization_branding_update",
    "organization_update",
    "payout_defaults",
    "product_archive",
    "product_create",
    "product_get",
    "product_list",
    "product_update",
    "revenue_record",
]
