"""Helpers shared by the sandbox tests."""

from __future__ import annotations

import datetime as dt
import socket
import struct
import zlib
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from django_paycollect.client import BillingData

BILLING = BillingData(name="Mona Ali", email="mona@example.com", phone_number="+201001234567")
BILLING_JSON = {"name": "Mona Ali", "email": "mona@example.com", "phone_number": "+201001234567"}


def png_bytes() -> bytes:
    """A real 1x1 png."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def query_of(url: str) -> dict[str, str]:
    """Query parameters of a redirect URL (each given once)."""
    parsed = parse_qs(urlsplit(url).query, keep_blank_values=True)
    assert all(len(v) == 1 for v in parsed.values()), parsed
    return {k: v[0] for k, v in parsed.items()}


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/callback"


def future_date(days: int) -> dt.date:
    # Far enough past any clock advance a test makes; the sandbox checks expiry against its own clock.
    return dt.date.today() + dt.timedelta(days=days)


def assert_envelope(response: requests.Response, code: int) -> dict[str, Any]:
    """The spec's envelope, exactly: keys, types, code equal to the HTTP status, error shapes."""
    assert response.status_code == code, response.text[:500]
    assert response.headers["Content-Type"].startswith("application/json"), response.headers
    body: dict[str, Any] = response.json(parse_float=Decimal)
    assert set(body) == {"status", "data", "count", "next", "previous"}, body
    assert body["count"] is None
    assert body["next"] is None
    assert body["previous"] is None
    status = body["status"]
    assert set(status) == {"code", "message", "errors"}, status
    assert status["code"] == code
    assert isinstance(status["message"], str)
    assert status["message"]
    assert isinstance(status["errors"], list)
    assert isinstance(body["data"], dict)
    if code < 400:
        assert status["message"] == "success"
        assert status["errors"] == []
    else:
        assert body["data"] == {}
        assert status["errors"], "an error envelope names what is wrong"
        for item in status["errors"]:
            assert isinstance(item, dict), item
            assert len(item) == 1, item
            (value,) = item.values()
            if isinstance(value, dict):  # nested, like billing_data
                for nested in value.values():
                    assert isinstance(nested, list), item
                    assert all(isinstance(m, str) for m in nested), item
            else:
                assert isinstance(value, list), item
                assert value, item
                assert all(isinstance(m, str) for m in value), item
    return body


def error_fields(body: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for item in body["status"]["errors"]:
        merged.update(item)
    return merged
