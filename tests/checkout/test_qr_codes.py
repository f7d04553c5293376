"""The QR codes the pages draw (a deposit's payment request, a link, an authenticator's key) read back as
the text they encode, by zxing-cpp's reader from what Chromium paints, and from the terminal's blocks."""

from __future__ import annotations

import io

import pytest
import zxingcpp
from PIL import Image

from checkout.display import QR_QUIET_ZONE, qr_rows, qr_svg, qr_terminal

TEXTS = [
    # EIP-681 payment requests: a token transfer and a native coin, as the deposit page draws them
    "ethereum:0x5FbDB2315678afecb367f032d93F642f64180aa3@31337/transfer"
    "?address=0x48Ba242E152A563051A81420bE54e3d85618a3fA&uint256=10030000",
    "ethereum:0x48Ba242E152A563051A81420bE54e3d85618a3fA@8453?value=1000000000000000000",
    "http://127.0.0.1:8000/pay/Ab3dEf9h",
    "otpauth://totp/Checkout:ops?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Checkout",
]


def _read(image: Image.Image) -> list[str]:
    return [found.text for found in zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)]


@pytest.mark.parametrize("text", TEXTS)
def test_the_svg_chromium_paints_reads_back_as_its_text(browser_page, text):
    page = browser_page
    page.set_content(f"<!doctype html><body style='margin:0;background:#fff'>{qr_svg(text)}</body>")
    shot = page.locator("svg").screenshot()
    assert _read(Image.open(io.BytesIO(shot))) == [text]


def test_a_changed_amount_draws_another_code():
    one, other = TEXTS[0], TEXTS[0].replace("10030000", "10030001")
    assert qr_svg(one) != qr_svg(other)


@pytest.mark.parametrize("text", TEXTS)
def test_the_terminal_blocks_read_back_as_their_text(text):
    lines = qr_terminal(text).splitlines()
    width = len(lines[0])
    assert all(len(line) == width for line in lines)
    # Each character is two modules, one above the other; a block is drawn light (a dark terminal's text).
    halves = {"\u2588": (255, 255), "\u2580": (255, 0), "\u2584": (0, 255), " ": (0, 0)}
    pixels = [[halves[c][0] for c in line] for line in lines] + [
        [halves[c][1] for c in line] for line in lines
    ]
    rows = [row for pair in zip(pixels[: len(lines)], pixels[len(lines) :], strict=True) for row in pair]
    image = Image.new("L", (width, len(rows)))
    image.putdata([value for row in rows for value in row])
    image = image.resize((width * 8, len(rows) * 8), Image.NEAREST)
    assert _read(image) == [text]
    assert lines[0] == "\u2588" * width  # the quiet zone, light, above the code
    assert width == len(qr_rows(text)) + 2 * QR_QUIET_ZONE
