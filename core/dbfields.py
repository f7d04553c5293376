"""Model fields the database backends do not have."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core import exceptions
from django.db import models

UINT256_DIGITS = 78  # 2**256 - 1 has 78 decimal digits


class Uint256Field(models.Field):
    """A uint256 amount (a token's smallest unit), exact on every backend; a Python int.

    PostgreSQL keeps it as numeric(78, 0). SQLite has no exact type that wide:
    its DECIMAL keeps 15 significant digits, so 1.000000000000000001 ETH
    (10**18 + 1 wei) would come back as 10**18. There it is stored as text,
    zero-padded to 78 digits, so equality, ranges and ORDER BY stay exact
    (only SQL arithmetic such as SUM turns it into a float there).
    """

    description = "Unsigned 256-bit integer"
    empty_strings_allowed = False

    def db_type(self, connection) -> str:
        if connection.vendor == "postgresql":
            return f"numeric({UINT256_DIGITS}, 0)"
        return f"varchar({UINT256_DIGITS})"

    def to_python(self, value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool):
            raise exceptions.ValidationError(f"{value!r} is not an amount.", code="invalid")
        try:
            exact = value if isinstance(value, int) else Decimal(str(value))
        except ArithmeticError:
            raise exceptions.ValidationError(f"{value!r} is not an amount.", code="invalid") from None
        if not isinstance(exact, int) and (not exact.is_finite() or exact != exact.to_integral_value()):
            raise exceptions.ValidationError(f"{value!r} is not a whole amount.", code="invalid")
        number = int(exact)
        if not 0 <= number < 2**256:
            raise exceptions.ValidationError(f"{value!r} is not a uint256 amount.", code="invalid")
        return number

    def from_db_value(self, value: Any, expression, connection) -> int | None:
        return None if value is None else int(value)

    def get_prep_value(self, value: Any) -> int | None:
        return self.to_python(super().get_prep_value(value))

    def get_db_prep_value(self, value: Any, connection, prepared: bool = False) -> Any:
        if not prepared:
            value = self.get_prep_value(value)
        if value is None:
            return None
        return Decimal(value) if connection.vendor == "postgresql" else str(value).zfill(UINT256_DIGITS)


class _EncryptedField(models.TextField):
    """A text column holding AES-256-GCM ciphertext under ENCRYPTION_KEY, one derived key per `purpose`."""

    def __init__(self, *args, purpose: str = "pii", **kwargs):
        self.purpose = purpose
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        if self.purpose != "pii":
            kwargs["purpose"] = self.purpose
        return name, path, args, kwargs


class EncryptedTextField(_EncryptedField):
    """Text encrypted at rest (AES-256-GCM under ENCRYPTION_KEY, one key per `purpose`); a str in Python.

    For personal data such as a customer's name and email: the database and
    its backups hold only ciphertext. It cannot be searched or sorted in SQL.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("blank", True)
        kwargs.setdefault("default", "")
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: Any, expression, connection) -> str:
        from core.crypto import decrypt

        return decrypt(value, purpose=self.purpose).decode() if value else ""

    def get_prep_value(self, value: Any) -> str:
        from core.crypto import encrypt

        value = super().get_prep_value(value)
        return encrypt(value.encode(), purpose=self.purpose) if value else ""


class EncryptedJSONField(_EncryptedField):
    """A JSON value encrypted at rest (AES-256-GCM, as EncryptedTextField): a payer's form answers, a shipping
    address, a webhook event's data. With null=True, None is stored as NULL; it cannot be queried in SQL."""

    # For django-stubs: the Python value is any JSON value, not the column's text.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: Any, expression, connection) -> Any:
        from core.crypto import decrypt_json

        return None if value is None or value == "" else decrypt_json(value, purpose=self.purpose)

    def to_python(self, value: Any) -> Any:
        return value  # already the JSON value (never a string to parse)

    def get_prep_value(self, value: Any) -> str | None:
        from core.crypto import encrypt_json

        return None if value is None else encrypt_json(value, purpose=self.purpose)

    def value_to_string(self, obj) -> str:
        import json

        return json.dumps(self.value_from_object(obj))
