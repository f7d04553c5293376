"""Customers in the dashboard: add one, a customer's page (their payments, their name and email to edit)
and erasure of their personal data. Through the API's serializers and services (merchant.customers),
audited with the member as the actor; erasure, which cannot be undone, is for admins and owners."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from checkout.models import Transaction
from dashboard.auth import member_view, owned
from dashboard.forms import ApiForm, form_page, submitted, to
from dashboard.pages import ROW_FIELDS, payment_row
from dashboard.roles import ADMIN, WRITE
from merchant import api as services
from merchant.models import Customer
from platform_api.context import RequestContext

FLASH = "dashboard_customer_flash"
PAYMENTS_SHOWN = 25


class CustomerForm(ApiForm):
    FIELDS = ("wallet_address", "name", "email")

    def body(self, *, editing: bool) -> dict | None:
        if editing:
            return self.checked(
                services.CustomerUpdateSerializer, {"name": self.text("name"), "email": self.text("email")}
            )
        return self.checked(services.CustomerWriteSerializer, {name: self.text(name) for name in self.FIELDS})


def _owned(request: HttpRequest, customer_id: str) -> Customer:
    return owned(Customer.objects.all(), request, customer_id, "customer")


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def customer_create(request: HttpRequest) -> HttpResponse:
    organization = request.organization
    form = CustomerForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and (
        done := submitted(
            request,
            form,
            body=lambda: form.body(editing=False),
            write=lambda ctx, data: (
                services.customer_create(ctx=ctx, organization=organization, data=data).id
            ),
            done=to("dashboard:customer"),
            once=True,
        )
    ):
        return done
    return form_page(request, "dashboard/customer_new.html", form, nav="customers")


@require_http_methods(["GET", "POST"])
@member_view(WRITE)
def customer_detail(request: HttpRequest, customer_id: str) -> HttpResponse:
    customer = _owned(request, customer_id)
    form = CustomerForm(request.POST) if request.method == "POST" else CustomerForm(initial=vars(customer))
    if request.method == "POST" and (
        done := submitted(
            request,
            form,
            body=lambda: form.body(editing=True),
            write=lambda ctx, data: services.customer_update(ctx=ctx, customer=customer, data=data).id,
            done=to("dashboard:customer", flash=(FLASH, "Customer saved.")),
        )
    ):
        return done
    payments = (
        Transaction.objects.filter(organization=request.organization, customer=customer)
        .only(*ROW_FIELDS)
        .order_by("-created_at")[:PAYMENTS_SHOWN]
    )
    return render(
        request,
        "dashboard/customer.html",
        {
            "member": request.member,
            "customer": customer,
            "form": form,
            "rows": [payment_row(txn) for txn in payments],
            "flash": request.session.pop(FLASH, None),
            "nav": "customers",
        },
        status=400 if form.errors else 200,
    )


@require_POST
@member_view(ADMIN)
def customer_erase(request: HttpRequest, customer_id: str) -> HttpResponse:
    """Erase the customer's name, email and metadata, and what every checkout of theirs kept of it."""
    customer = _owned(request, customer_id)
    if request.POST.get("confirm") != "yes":
        request.session[FLASH] = "Nothing was erased: tick the box to confirm first."
        return redirect("dashboard:customer", customer.id)
    if customer.erased_at is None:
        services.customer_erase(ctx=RequestContext.for_member(request, request.member), customer=customer)
    request.session[FLASH] = (
        "Erased: their name, email and answers are gone; their payments stay for the books."
    )
    return redirect("dashboard:customer", customer.id)
