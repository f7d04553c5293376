"""The merchant dashboard at /dashboard/."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from core.inputs import register_converters
from dashboard import (
    account,
    catalogue,
    customer_pages,
    discount_pages,
    keys,
    links,
    member_pages,
    pages,
    product_pages,
    refund_pages,
    settings_pages,
    views,
    webhook_pages,
)

register_converters()

app_name = "dashboard"

urlpatterns = [
    path("", pages.home, name="home"),
    path("payments/", pages.payments, name="payments"),
    path("payments/<public_id:transaction_id>", pages.payment, name="payment"),
    path("payments/<public_id:transaction_id>/refund", refund_pages.refund_create, name="refund-create"),
    path("refunds/", refund_pages.refunds, name="refunds"),
    path("refunds/top-ups", refund_pages.top_up_create, name="refund-top-up-create"),
    path("refunds/top-ups/<public_id:top_up_id>", refund_pages.top_up, name="refund-top-up"),
    path("refunds/withdraw", refund_pages.withdraw, name="refund-withdraw"),
    path("refunds/<public_id:refund_id>", refund_pages.refund, name="refund"),
    path("refunds/<public_id:refund_id>/owed", refund_pages.refund_owed, name="refund-owed"),
    path("refunds/<public_id:refund_id>/cancel", refund_pages.refund_cancel, name="refund-cancel"),
    path("links/", links.link_list, name="links"),
    path("links/new/", links.link_create, name="link-new"),
    path("links/<public_id:link_id>", links.link_detail, name="link"),
    path("links/<public_id:link_id>/active", links.link_active, name="link-active"),
    path("links/<public_id:link_id>/duplicate", links.link_duplicate, name="link-duplicate"),
    path("links/<public_id:link_id>/edit", links.link_edit, name="link-edit"),
    path("links/<public_id:link_id>/items", links.link_item_add, name="link-item-add"),
    path(
        "links/<public_id:link_id>/items/<public_id:item_id>/remove",
        links.link_item_remove,
        name="link-item-remove",
    ),
    path("checkouts/<public_id:session_id>", pages.checkout, name="checkout"),
    path("webhooks/", webhook_pages.webhook_list, name="webhooks"),
    path("webhooks/new/", webhook_pages.webhook_create, name="webhook-new"),
    path("webhooks/<public_id:webhook_id>/edit", webhook_pages.webhook_edit, name="webhook-edit"),
    path("webhooks/<public_id:webhook_id>", webhook_pages.webhook_detail, name="webhook"),
    path(
        "webhooks/<public_id:webhook_id>/<slug:action>", webhook_pages.webhook_action, name="webhook-action"
    ),
    path("keys/", keys.key_list, name="keys"),
    path("keys/<public_id:key_id>/revoke", keys.key_revoke, name="key-revoke"),
    path("analytics/", catalogue.analytics, name="analytics"),
    path("products/", catalogue.products, name="products"),
    path("products/new/", product_pages.product_create, name="product-new"),
    path("products/<public_id:product_id>", product_pages.product_detail, name="product"),
    path("products/<public_id:product_id>/archive", product_pages.product_archive, name="product-archive"),
    path("products/<public_id:product_id>/link", product_pages.product_link, name="product-link"),
    path("discount-codes/", catalogue.discounts, name="discounts"),
    path("discount-codes/new/", discount_pages.discount_create, name="discount-new"),
    path("discount-codes/<public_id:code_id>", discount_pages.discount_detail, name="discount"),
    path("discount-codes/<public_id:code_id>/active", discount_pages.discount_active, name="discount-active"),
    path("discount-codes/<public_id:code_id>/delete", discount_pages.discount_delete, name="discount-delete"),
    path("customers/", catalogue.customers, name="customers"),
    path("customers/new/", customer_pages.customer_create, name="customer-new"),
    path("customers/<public_id:customer_id>", customer_pages.customer_detail, name="customer"),
    path("customers/<public_id:customer_id>/erase", customer_pages.customer_erase, name="customer-erase"),
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
    path("two-factor/", account.two_factor, name="two-factor"),
    path("account/", account.account_page, name="account"),
    path("account/recovery-codes/", account.recovery_codes_shown, name="recovery-codes"),
    path("account/recovery-codes/new", account.recovery_codes_new, name="recovery-codes-new"),
    path("invitations/<str:token>/", views.invitation, name="invitation"),
    # Password reset: Django's views, which answer the same whether the email has an account or not.
    path(
        "password-reset/",
        views.PasswordReset.as_view(
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
        views.PasswordResetConfirm.as_view(
            template_name="dashboard/password_reset_confirm.html",
            success_url=reverse_lazy("dashboard:sign-in"),
        ),
        name="password-reset-confirm",
    ),
    path("sign-out/", views.sign_out, name="sign-out"),
    path("sign-out/everywhere/", views.sign_out_everywhere, name="sign-out-everywhere"),
    path("test-mode/", views.test_mode_switch, name="test-mode"),
]
