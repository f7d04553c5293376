"""Products in the dashboard: create, edit, archive, and make a payment link of one. Through the API's
serializer and services (merchant.products, checkout.links), audited with the member as the actor."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from checkout import services as link_services
from core.errors import DomainError
from dashboard.auth import member_view, owned
from dashboard.forms import PricedForm, form_page, submitted, to, token_options
from dashboard.once import made_before, remember
from dashboard.roles import WRITE
from merchant import api as services
from merchant.models import Product
from platform_api.context import RequestContext
from platform_api.errors import PlatformError

FLASH = "dashboard_product_flash"
TYPES = [(Product.Type.ONE_TIME, "A fixed price"), (Product.Type.VARIABLE, "The payer chooses the amount")]


class ProductForm(PricedForm):
    FIELDS = ("name", "description", "product_type", "pay_to", "amount", "recipient_address", "image_url")

    def body(self, *, editing: bool) -> dict | None:
        body = {name: self.text(name) for name in ("name", "description", "product_type", "image_url")}
        body |= self.priced(editing=editing)
        if body["product_type"] == Product.Type.VARIABLE and body.get("amount") is None:
            body.pop("amount", None)  # the service clears a variable product's price itself
        return self.checked(services.ProductWriteSerializer, body, partial=editing)


def _owned(request: HttpRequest, product_id: str) -> Product:
    return owned(Product.objects.all(), request, product_id, "product")


def _page(request: HttpRequest, form: ProductForm, product: Product | None) -> HttpResponse:
    return form_page(
        request,
        "dashboard/product_form.html",
        form,
        nav="products",
        flash=FLASH,
        product=product,
        types=TYPES,
        tokens=token_options(),
    )


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def product_create(request: HttpRequest) -> HttpResponse:
    organization = request.organization
    if request.method == "GET":
        form = ProductForm.new(organization)
        form.values["product_type"] = Product.Type.ONE_TIME
        return _page(request, form, None)
    form = ProductForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(editing=False),
        write=lambda ctx, data: services.product_create(ctx=ctx, organization=organization, data=data).id,
        done=to("dashboard:product"),
        once=True,
    ) or _page(request, form, None)


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def product_detail(request: HttpRequest, product_id: str) -> HttpResponse:
    """The product's form: every member reads it, one who may write saves it."""
    product = _owned(request, product_id)
    if request.method == "GET":
        return _page(request, ProductForm.of(product), product)
    form = ProductForm(request.POST)
    return submitted(
        request,
        form,
        body=lambda: form.body(editing=True),
        write=lambda ctx, data: services.product_update(ctx=ctx, product=product, data=data).id,
        done=to("dashboard:product", flash=(FLASH, "Product saved.")),
    ) or _page(request, form, product)


@require_POST
@member_view(WRITE)
def product_archive(request: HttpRequest, product_id: str) -> HttpResponse:
    product = _owned(request, product_id)
    if product.is_active:
        services.product_archive(ctx=RequestContext.for_member(request, request.member), product=product)
    request.session[FLASH] = "Archived: the product makes no new links; links made from it keep working."
    return redirect("dashboard:product", product.id)


@require_POST
@member_view(WRITE)
def product_link(request: HttpRequest, product_id: str) -> HttpResponse:
    """A payment link of the product (its name, price, token and recipient), made once per click."""
    product = _owned(request, product_id)
    if made := made_before(request):
        return redirect("dashboard:link", made)
    try:
        link = link_services.product_generate_link(
            ctx=RequestContext.for_member(request, request.member), product=product, overrides={}
        )
    except (DomainError, PlatformError) as exc:
        request.session[FLASH] = getattr(exc, "message", str(exc))
        return redirect("dashboard:product", product.id)
    remember(request, link.id)
    return redirect("dashboard:link", link.id)
