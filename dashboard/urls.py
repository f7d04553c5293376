"""The merchant dashboard at /dashboard/."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from core.inputs import register_converters
from dashboard import catalogue, keys, links, member_pages, pages, settings_pages, views, webhook_pages

register_converters()

app_name = "dashboard"

urlpatterns = [
    path("", pages.home, name="home"),
    path("payments/", pages.payments, name="payments"),
    path("payments/<public_id:transaction_id>", pages.payment, name="payment"),
    path("links/", links.link_list, name="links"),
    path("links/new/", links.link_create, name="link-new"),
    path("links/<public_id:link_id>", links.link_detail, name="link"),
    path("links/<public_id:link_id>/active", links.link_active, name="link-active"),
    path("links/<public_id:link_id>/duplicate", links.link_duplicate, name="link-duplicate"),
    path("webhooks/", webhook_pages.webhook_list, name="webhooks"),
    path("webhooks/<public_id:webhook_id>", webhook_pages.webhook_detail, name="webhook"),
    path(
        "webhooks/<public_id:webhook_id>/<slug:action>", webhook_pages.webhook_action, name="webhook-action"
    ),
    path("keys/", keys.key_list, name="keys"),
    path("keys/<public_id:key_id>/revoke", keys.key_revoke, name="key-revoke"),
    path("analytics/", catalogue.analytics, name="analytics"),
    path("products/", catalogue.products, name="products"),
    path("discount-codes/", catalogue.discounts, name="discounts"),
    path("customers/", catalogue.customers, name="customers"),
    path("settings/", settings_pages.settings_page, name="settings"),
    path("team/", member_pages.member_list, name="members"),
    path("team/<public_id:member_id>/remove", member_pages.member_remove, name="member-remove"),
    path(
        "team/invitations/<public_id:invitation_id>/revoke",
        member_pages.invitation_revoke,
        name="invitation-revoke",
    ),
    path("sign-in/", views.sign_in, name="sign-in"),
    path("sign-in/code/", views.sign_in_code, name="sign-in-code"),
    path("two-factor/", views.two_factor, name="two-factor"),
    path("invitations/<str:token>/", views.invitation, name="invitation"),
    # Password reset: Django's views, which answer the same whether the email has an account or not.
    path(
        "password-reset/",
        auth_views.PasswordResetView.as_view(
            template_name="dashboard/password_reset.html",
            email_template_name="dashboard/email/password_reset.txt",
            subject_template_name="dashboard/email/password_reset_subject.txt",
            success_url=reverse_lazy("dashboard:password-reset-sent"),
            extra_context={"title": "Reset your password"},
        ),
        name="password-reset",
    ),
    path(
        "password-reset/sent/",
        auth_views.PasswordResetDoneView.as_view(template_name="dashboard/password_reset_sent.html"),
        name="password-reset-sent",
    ),
    path(
        "password-reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="dashboard/password_reset_confirm.html",
            success_url=reverse_lazy("dashboard:sign-in"),
        ),
        name="password-reset-confirm",
    ),
    path("sign-out/", views.sign_out, name="sign-out"),
    path("sign-out/everywhere/", views.sign_out_everywhere, name="sign-out-everywhere"),
]
