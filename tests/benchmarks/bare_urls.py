from django.http import JsonResponse
from django.urls import path


def bare(request):
    return JsonResponse({"success": True, "data": {"ok": True}})


urlpatterns = [path("bare", bare)]
