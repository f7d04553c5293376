"""Base views of the platform interface.

`PlatformAPIView` authenticates with an API key, checks the permission level,
applies the per-key rate limit and Idempotency-Key, and renders every error in
the platform envelope. `PublicPlatformAPIView` is the same without a key
(quick pay), limited per client IP.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from chains.testchains import enter_test_mode
from core.http import client_ip, ip_digest
from core.inputs import InputChecksMixin
from observability import context
from platform_api import idempotency, ratelimit
from platform_api.errors import PlatformError, platform_exception_handler
from platform_api.models import Permission
from platform_api.pagination import ListParams, list_envelope
from platform_api.rows import Rows
from platform_api.services import api_key_authenticate


def presented_key(request) -> str | None:
    authorization = request.headers.get("Authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return request.headers.get("X-API-Key", "").strip() or None


def authenticate_limiting_failures(request) -> None:
    """Run the view's authenticators; failed attempts are limited per client IP (both interfaces).

    Only a key that fails is counted, and only it is refused: past
    AUTH_FAILURE_RATE_LIMIT_PER_MINUTE failures from one address, a wrong,
    expired or revoked key gets 429 instead of 401, while a valid key from
    that address (another merchant behind the same proxy, say) is served as
    usual, under its own per-key limit. A guess still costs one indexed
    lookup; keys have 190 bits, so the limit bounds what guessing costs the
    service, not its odds. Both answers carry the failure bucket's
    X-RateLimit-* headers.
    """
    if presented_key(request) is None:  # no key, nothing to guess: the view says whether one is needed
        request.user  # noqa: B018 - runs the authenticators
        return
    try:
        request.user  # noqa: B018 - runs the authenticators
    except PlatformError as exc:
        if exc.status != 401:
            raise
        limit = settings.AUTH_FAILURE_RATE_LIMIT_PER_MINUTE
        state = ratelimit.hit(f"authfail:{ip_digest(client_ip(request))}", limit)
        if state.allowed:
            exc.headers.update(state.headers())
            raise
        error = PlatformError.rate_limited(
            state.retry_after, limit, what="failed authentications from this address"
        )
        error.headers.update(state.headers())
        raise error from None


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer <key>` (preferred) or `X-API-Key: <key>`; sets `request.auth` to the ApiKey.

    A view that counts requests in the key's own bucket sets `request.counted_in`; the key's record and
    that count then come from one Redis round trip (`api_key.counted`)."""

    def authenticate(self, request):
        counted_in = getattr(request, "counted_in", None)
        return (None, api_key_authenticate(raw_key=presented_key(request), counted_in=counted_in))

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class OptionalApiKeyAuthentication(ApiKeyAuthentication):
    """No key: anonymous (`request.auth` is None). A key: it must be valid, like anywhere else."""

    def authenticate(self, request):
        return None if presented_key(request) is None else super().authenticate(request)


class HasRequiredPermission(BasePermission):
    """The key's level (admin > write > read) must reach what the view requires for the method."""

    def has_permission(self, request, view):
        required = view.required_permission(request.method)
        if not request.auth.allows(required):
            raise PlatformError.insufficient_permissions(required)
        return True


class _Rollback(Exception):
    """Carries a 5xx response out of the transaction so that it rolls back."""

    def __init__(self, response: Response):
        self.response = response


class PlatformAPIView(InputChecksMixin, APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [HasRequiredPermission]
    # Method -> required level; anything not listed needs `write` (GET: `read`).
    permissions_by_method: dict[str, str] = {}
    IDEMPOTENT_METHODS: tuple[str, ...] = ("POST", "PATCH")

    def required_permission(self, method: str) -> str:
        default = Permission.READ if method in ("GET", "HEAD", "OPTIONS") else Permission.WRITE
        return self.permissions_by_method.get(method, default)

    def get_exception_handler(self):
        return platform_exception_handler

    # Rate limit -------------------------------------------------------------

    def rate_limit_bucket(self, request) -> tuple[str, int]:
        return f"key:{request.auth.pk}", settings.PLATFORM_RATE_LIMIT_PER_MINUTE

    def perform_authentication(self, request):
        if self.authentication_classes:
            if type(self).rate_limit_bucket is PlatformAPIView.rate_limit_bucket:  # the key's own bucket
                request.counted_in = ("key:", settings.PLATFORM_RATE_LIMIT_PER_MINUTE)
            authenticate_limiting_failures(request)

    def check_throttles(self, request):
        result = getattr(request.auth, "counted", None)  # counted with the key's record, in one round trip
        if result is None:
            bucket, limit = self.rate_limit_bucket(request)
            result = ratelimit.hit(bucket, limit)
        limit = result.limit
        self.rate_limit_result = result
        if not result.allowed:
            raise PlatformError.rate_limited(result.retry_after, limit)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        result = getattr(self, "rate_limit_result", None)
        if result is not None:
            for name, value in result.headers().items():
                response[name] = value
        return response

    # Idempotency ------------------------------------------------------------

    def idempotency_scope(self, request) -> str:
        return f"org:{request.auth.organization_id}"

    def dispatch(self, request, *args, **kwargs):
        # DRF's dispatch, with the handler run under an Idempotency-Key claim when one is sent.
        self.args, self.kwargs = args, kwargs
        request = self.initialize_request(request, *args, **kwargs)
        self.request = request
        self.headers = self.default_response_headers
        try:
            self.initial(request, *args, **kwargs)
            if request.auth is not None:  # the organization's id on this request's log lines
                context.organization_id.set(request.auth.organization_id)
                enter_test_mode(not request.auth.livemode)  # what the chain fields accept
            method = request.method.lower()
            handler = getattr(self, method, None) if method in self.http_method_names else None
            handler = handler or self.http_method_not_allowed
            key = request.headers.get(idempotency.HEADER)
            if (
                key is not None
                and request.method in self.IDEMPOTENT_METHODS
                and handler != self.http_method_not_allowed
            ):
                response = self._run_idempotent(key, handler, request, *args, **kwargs)
            else:
                response = handler(request, *args, **kwargs)
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(request, response, *args, **kwargs)
        return self.response

    def _run_idempotent(self, key, handler, request, *args, **kwargs) -> Response:
        outcome = idempotency.claim(
            scope=self.idempotency_scope(request),
            key=key,
            method=request.method,
            path=request.path,
            data=request.data,
        )
        if isinstance(outcome, idempotency.StoredResponse):
            return Response(outcome.body, status=outcome.status, headers={"Idempotent-Replayed": "true"})
        # The business write and the stored response commit together: if the
        # process dies in between, neither is kept and the key can be retried.
        try:
            with transaction.atomic():
                try:
                    response = handler(request, *args, **kwargs)
                except Exception as exc:
                    response = self.handle_exception(exc)
                if response.status_code >= 500:
                    raise _Rollback(response)
                idempotency.complete(outcome, status=response.status_code, body=response.data)
                return response
        except _Rollback as rollback:
            idempotency.complete(outcome, status=rollback.response.status_code, body=None)
            return rollback.response


class PublicPlatformAPIView(PlatformAPIView):
    """A platform endpoint that needs no key; limits and idempotency are per client IP.

    A key may still be sent: it is then checked like anywhere else (a bad one is
    401), the request acts for its organization, needs the method's permission
    level, and is limited and made idempotent per key.
    """

    authentication_classes = [OptionalApiKeyAuthentication]
    permission_classes = []
    public_rate_limit_setting = "QUICK_PAY_RATE_LIMIT_PER_MINUTE"

    def check_permissions(self, request):
        if request.auth is not None:
            HasRequiredPermission().has_permission(request, self)

    def rate_limit_bucket(self, request) -> tuple[str, int]:
        if request.auth is not None:
            return super().rate_limit_bucket(request)
        limit = getattr(settings, self.public_rate_limit_setting)
        return f"ip:{self.__class__.__name__}:{ip_digest(client_ip(request))}", limit

    def idempotency_scope(self, request) -> str:
        if request.auth is not None:
            return super().idempotency_scope(request)
        return f"ip:{ip_digest(client_ip(request))}"


def list_of(name: str, item) -> serializers.Serializer:
    return inline_serializer(
        name,
        {
            "object": serializers.CharField(default="list"),
            "data": item,
            "has_more": serializers.BooleanField(),
            "total_count": serializers.IntegerField(),
            "url": serializers.CharField(),
        },
    )


def deleted(name: str) -> serializers.Serializer:
    return inline_serializer(
        name,
        {
            "object": serializers.CharField(),
            "id": serializers.CharField(),
            "deleted": serializers.BooleanField(),
        },
    )


def render_list(request, queryset, serializer_class, sort_fields, *, rows: Rows | None = None):
    """One page of `queryset` in the list envelope; with `rows` (the serializer's `Rows`), read as values."""
    params = ListParams.from_query(request.query_params, sort_fields=sort_fields)
    if rows is not None:
        page, total = params.apply_values(rows.values(queryset))
        return Response(list_envelope(path=request.path, data=rows.render(page), total=total, params=params))
    page, total = params.apply(queryset)
    data = serializer_class(page, many=True).data
    return Response(list_envelope(path=request.path, data=data, total=total, params=params))
