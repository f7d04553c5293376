"""The payer's pages: a payment link's or session's hosted checkout, and a widget's embeddable page (HTML)."""

from django.urls import path

from checkout import hosted, widget_page
from core.inputs import register_converters
from merchant.api import logo_image

register_converters()

urlpatterns = [
    path("pay/<public_id:short_code>", hosted.link_page, name="pay-link"),
    path("pay/s/<public_id:session_id>", hosted.session_page, name="pay-session"),
    path("pay/s/<public_id:session_id>/status", hosted.session_status, name="pay-status"),
    path("pay/s/<public_id:session_id>/devnet-pay", hosted.session_devnet_pay, name="pay-devnet"),
    path("pay/logo/<public_id:organization_id>/<slug:digest>.png", logo_image, name="pay-logo"),
    # May be framed.
    path("widgets/<public_id:short_code>", widget_page.widget_page, name="widget-page"),
]
