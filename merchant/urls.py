"""The merchant's records under /api/v1: products, customers, the organization's settings."""

from django.urls import path

from core.inputs import register_converters
from merchant import branding, customers, organization, products

register_converters()

urlpatterns = [
    path("products", products.ProductCollectionView.as_view(), name="products"),
    path("products/<public_id:product_id>", products.ProductDetailView.as_view(), name="product"),
    path("organization", organization.OrganizationView.as_view(), name="organization"),
    path("organization/logo", branding.OrganizationLogoView.as_view(), name="organization-logo"),
    path("customers", customers.CustomerCollectionView.as_view(), name="customers"),
    path("customers/export", customers.CustomerExportView.as_view(), name="customer-export"),
    path("customers/<public_id:customer_id>", customers.CustomerDetailView.as_view(), name="customer"),
]
