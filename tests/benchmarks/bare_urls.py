"""The two references of `make bench`, on the service's own settings and middleware: a bare JSON view, and the
same view making one indexed query over the same database (the floor of any read backed by the database)."""

from django.http import JsonResponse
from django.urls import path

from orders.models import Order


def bare(request):
    return JsonResponse({"success": True, "data": {"ok": True}})


def one_query(request, order_id):
    status = Order.objects.filter(pk=order_id).values_list("status", flat=True).first()
    return JsonResponse({"success": True, "data": {"status": status}})


urlpatterns = [path("bare", bare), path("one-query/<uuid:order_id>", one_query)]
