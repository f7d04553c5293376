"""The merchant dashboard at /dashboard/."""

from django.urls import path

from core.inputs import register_converters
from dashboard import pages, views

register_converters()

app_name = "dashboard"

urlpatterns = [
    path("", pages.home, name="home"),
    path("payments/", pages.payments, name="payments"),
    path("payments/<public_id:transaction_id>", pages.payment, name="payment"),
    path("sign-in/", views.sign_in, name="sign-in"),
    path("sign-in/code/", views.sign_in_code, name="sign-in-code"),
    path("two-factor/", views.two_factor, name="two-factor"),
    path("invitations/<str:token>/", views.invitation, name="invitation"),
    path("sign-out/", views.sign_out, name="sign-out"),
    path("sign-out/everywhere/", views.sign_out_everywhere, name="sign-out-everywhere"),
]
