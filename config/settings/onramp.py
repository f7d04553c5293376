"""Fiat onramp vendors (vendorA's hosted buy flow, vendorB's card payments) and the caller's
geolocation."""

from __future__ import annotations

import os

from config.settings.env import env_int, env_list

# vendorA: hosted buy flow. Base URLs and an API key (id + PEM private key, EC P-256 or Ed25519).
VENDOR_A_API_URL = os.environ.get("VENDOR_A_API_URL", "")
VENDOR_A_PAY_URL = os.environ.get("VENDOR_A_PAY_URL", "")
VENDOR_A_KEY_ID = os.environ.get("VENDOR_A_KEY_ID", "")
VENDOR_A_PRIVATE_KEY = os.environ.get("VENDOR_A_PRIVATE_KEY", "").replace("\\n", "\n")
VENDOR_A_JWT_ISSUER = os.environ.get("VENDOR_A_JWT_ISSUER", "cdp")
VENDOR_A_JWT_TTL_SECONDS = 120
# vendorB: card payments (payment intents, form-encoded API).
VENDOR_B_API_URL = os.environ.get("VENDOR_B_API_URL", "")
VENDOR_B_SECRET_KEY = os.environ.get("VENDOR_B_SECRET_KEY", "")
# Signs vendorB's payment-intent webhooks (POST /onramp/vendorB/webhook); a signature older than the
# tolerance is refused, so a captured delivery cannot be replayed later.
VENDOR_B_WEBHOOK_SECRET = os.environ.get("VENDOR_B_WEBHOOK_SECRET", "")
VENDOR_B_WEBHOOK_TOLERANCE_SECONDS = env_int("VENDOR_B_WEBHOOK_TOLERANCE_SECONDS", 300)
# Where vendorB works: ISO countries, minus ISO 3166-2 regions; and the card amount limits in USD.
EU_COUNTRIES = "AT,BE,BG,HR,CY,CZ,DK,EE,FI,FR,DE,GR,HU,IE,IT,LV,LT,LU,MT,NL,PL,PT,RO,SK,SI,ES,SE"
VENDOR_B_SUPPORTED_COUNTRIES = env_list("VENDOR_B_SUPPORTED_COUNTRIES", "US," + EU_COUNTRIES)
VENDOR_B_EXCLUDED_REGIONS = env_list("VENDOR_B_EXCLUDED_REGIONS", "US-HI")
VENDOR_B_MIN_USD = os.environ.get("VENDOR_B_MIN_USD", "1.00")
VENDOR_B_MAX_USD = os.environ.get("VENDOR_B_MAX_USD", "10000.00")
# Geolocation of the caller: a country (and region) header set by a trusted edge
# (e.g. a CDN), or a GeoLite2-City format database file. Neither: unknown location.
GEOLOCATION_COUNTRY_HEADER = os.environ.get("GEOLOCATION_COUNTRY_HEADER", "")
GEOLOCATION_REGION_HEADER = os.environ.get("GEOLOCATION_REGION_HEADER", "")
GEOIP_DATABASE_PATH = os.environ.get("GEOIP_DATABASE_PATH", "")
