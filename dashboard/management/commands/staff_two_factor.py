"""`manage.py staff_two_factor <username>`: set up a staff user's authenticator, which the admin asks for.

Run where the account was made (a server of the service): it shows a QR code and the key for an
authenticator app, reads the code the app then shows from standard input, and confirms the authenticator
only if that code is right; a first set-up prints ten recovery codes, shown this once. `--replace` sets up
a new authenticator for one who has one (a new phone): the old one stops working when the new one is
confirmed.
"""

from __future__ import annotations

import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

from checkout.display import qr_terminal
from dashboard.account import spaced_key
from dashboard.models import RecoveryCodes


class Command(BaseCommand):
    help = "Set up a staff user's authenticator app (the admin's second factor)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--replace", action="store_true", help="Replace the authenticator the user has.")

    def handle(self, *args, username: str, replace: bool, **options):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None or not user.is_staff:
            raise CommandError(
                f"{username!r} is not an active staff user (manage.py createsuperuser makes one)"
            )
        if TOTPDevice.objects.filter(user=user, confirmed=True).exists() and not replace:
            raise CommandError(f"{username} has an authenticator; --replace sets up a new one in its place")
        TOTPDevice.objects.filter(user=user, confirmed=False).delete()
        device = TOTPDevice.objects.create(user=user, confirmed=False, name="authenticator")
        self.stdout.write("Scan this with an authenticator app, or type the key:\n")
        self.stdout.write(self._terminal_qr(device.config_url))
        self.stdout.write(f"Key: {spaced_key(device.bin_key)}\n")
        self.stdout.write("Code the app shows now: ", ending="")
        self.stdout.flush()
        code = "".join(sys.stdin.readline().split())
        if not (code.isdigit() and len(code) == 6 and device.verify_token(code)):
            device.delete()
            raise CommandError("that is not the code the app shows; nothing was changed. Run it again.")
        with transaction.atomic():
            TOTPDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
            TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
            codes = None
            if not RecoveryCodes.objects.filter(user=user).exists():
                recovery = RecoveryCodes.objects.create(user=user, name="recovery codes", confirmed=True)
                codes = recovery.issue()
        self.stdout.write(f"{username} signs in to the admin with a code from this app from now on.")
        if codes:
            self.stdout.write("Recovery codes (each signs in once in place of a code; shown only now):")
            self.stdout.write("  " + "  ".join(codes))

    @staticmethod
    def _terminal_qr(uri: str) -> str:
        return qr_terminal(uri)
