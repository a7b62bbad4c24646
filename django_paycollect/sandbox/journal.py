"""The request journal: what clients sent to the spec's operations, with every secret redacted first.

Nothing secret is ever stored: x-api-key and Authorization headers are replaced by a marker before the row
is written, and so is any body or query field whose name looks like a secret (api_password of bank
settings, passwords, keys, tokens), at any depth, including JSON text inside multipart fields.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from . import fastpath
from .conf import get_settings
from .models import JournalEntry
from .state import writing

logger = logging.getLogger(__name__)

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(r"pass(word)?|secret|api[_-]?key|token|authorization|credential", re.IGNORECASE)
# Headers worth keeping in the journal; anything else a client sends is not interesting for tests.
_KEPT_HEADERS = ("content-type", "content-length", "user-agent", "accept", "idempotency-key", "x-request-id")
_SECRET_HEADERS = ("x-api-key", "authorization")
_MAX_TEXT = 4000
# key=value / "key": "value" pairs inside text that could not be parsed.
_SECRET_PAIR = re.compile(
    r"""(?P<key>["']?[\w\-\[\]]*(?:pass(?:word)?|secret|api[_-]?key|token|authorization)[\w\-\[\]]*["']?"""
    r"""\s*[:=]\s*)(?P<value>"[^"]*"|'[^']*'|[^&,;\s}]*)""",
    re.IGNORECASE,
)

_prune_counter = 0


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact(value: Any) -> Any:
    """A copy of a parsed body with secret-looking fields replaced, at any depth."""
    if isinstance(value, dict):
        return {key: (REDACTED if is_secret_name(str(key)) else redact(item)) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return redact_json_text(stripped)
            except ValueError:
                pass
        return value
    return value


def redact_url(url: str) -> str:
    """A URL for display: secret-looking query parameters and any password in it replaced.

    Callback URLs often carry the merchant's own token (the service signs nothing), so delivery logs
    show them this way.
    """
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = [
        (k, REDACTED if is_secret_name(k) else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="[]"), parts.fragment))


def mask_url(url: str) -> str:
    """A URL for visitors who may not see secrets: its scheme and host, and nothing of what follows.

    A merchant's callback token may sit anywhere in the path (the app's ``callback/<token>/``) or the
    query, under any name, so no part after the host is shown.
    """
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    rest = parts.path.strip("/") or parts.query or parts.fragment
    return urlunsplit((parts.scheme, host, f"/{REDACTED}" if rest else parts.path, "", ""))


def redact_json_text(text: str) -> Any:
    from .envelope import loads

    return redact(loads(text))


def redact_text(text: str) -> str:
    """Best effort for bodies that are not JSON or form data: hide anything shaped like a secret pair."""
    return _SECRET_PAIR.sub(lambda m: m.group("key") + REDACTED, text)


def _meta_key(header: str) -> str:
    name = header.upper().replace("-", "_")
    return name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"


# Read from the WSGI environ directly: building request.headers parses every header of the request.
_SECRET_META = [(name, _meta_key(name)) for name in _SECRET_HEADERS]
_KEPT_META = [(name, _meta_key(name)) for name in _KEPT_HEADERS]


def _query(request: HttpRequest) -> dict[str, str]:
    if not request.META.get("QUERY_STRING"):
        return {}
    return {key: (REDACTED if is_secret_name(key) else str(value)) for key, value in request.GET.items()}


def _has_body(request: HttpRequest) -> bool:
    return request.META.get("CONTENT_LENGTH") not in (None, "", "0")


def _headers(request: HttpRequest) -> dict[str, str]:
    meta = request.META
    out: dict[str, str] = {name: REDACTED for name, key in _SECRET_META if key in meta}
    has_body = _has_body(request)
    for name, key in _KEPT_META:
        value = meta.get(key, "")
        # WSGI servers fill in a default Content-Type even for requests without a body.
        if value and (has_body or key not in ("CONTENT_TYPE", "CONTENT_LENGTH")):
            out[name] = str(value)[:200]
    return out


def _body(request: HttpRequest, parsed_json: Any) -> Any:
    content_type = request.content_type or ""
    if parsed_json is not None:
        return redact(parsed_json)
    if content_type.startswith("multipart/") or content_type == "application/x-www-form-urlencoded":
        try:
            fields: dict[str, Any] = {}
            for key in request.POST:
                values = request.POST.getlist(key)
                fields[key] = values[0] if len(values) == 1 else values
            files: dict[str, Any] = {}
            for key in request.FILES:
                upload = request.FILES.get(key)
                if upload is None:
                    continue
                files[key] = {"name": upload.name, "size": upload.size, "content_type": upload.content_type}
        except Exception:  # an unparseable upload must not break the response
            return {"unparsed": True}
        body: dict[str, Any] = redact(fields)
        if files:
            body["_files"] = files
        return body
    if not _has_body(request):
        return None
    try:
        raw = request.body
    except Exception:
        return None
    if not raw:
        return None
    text = raw[:_MAX_TEXT].decode("utf-8", errors="replace")
    return {"text": redact_text(text)}


def record(
    request: HttpRequest,
    operation: str,
    response: HttpResponse | None,
    fault: str,
    duration_ms: int,
    parsed_json: Any = None,
) -> None:
    try:
        entry: dict[str, Any] = {
            "created": timezone.now(),
            "operation": operation,
            "method": request.method or "",
            "path": request.path[:2000],
            "query": _query(request),
            "headers": _headers(request),
            "body": _body(request, parsed_json),
            "response_status": response.status_code if response is not None else None,
            "fault": fault,
            "duration_ms": duration_ms,
        }
        if get_settings().journal_storage == "memory":
            _memory.append(entry)
        else:
            fastpath.insert_journal([JournalEntry(**entry)])
            _maybe_prune()
    except Exception:
        # The journal is a diagnostic aid; losing an entry must never change the answer to the client.
        logger.exception("could not record a journal entry for %s", operation)


class _MemoryJournal:
    """The standalone runner's journal: one process, so a bounded list in memory is enough, and it keeps
    a database write off every request (see benchmarks/sandbox_fetch.py)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: deque[dict[str, Any]] = deque()
        self._next_id = 1

    def append(self, entry: dict[str, Any]) -> None:
        with self._lock:
            entry["id"] = self._next_id
            self._next_id += 1
            self._entries.append(entry)
            while len(self._entries) > get_settings().journal_max_entries:
                self._entries.popleft()

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_memory = _MemoryJournal()


def entries(operation: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """Oldest first, optionally one operation's, optionally only the last ``limit``; as the control API
    shows them."""
    if get_settings().journal_storage == "memory":
        rows = [_shown(e) for e in _memory.entries() if operation is None or e["operation"] == operation]
    else:
        queryset = JournalEntry.objects.order_by("id")
        if operation is not None:
            queryset = queryset.filter(operation=operation)
        rows = [_shown({"id": e.pk, **{f: getattr(e, f) for f in _FIELDS}}) for e in queryset]
    return rows[-limit:] if limit else rows


_FIELDS = (
    "created",
    "operation",
    "method",
    "path",
    "query",
    "headers",
    "body",
    "response_status",
    "fault",
    "duration_ms",
)


def _shown(entry: dict[str, Any]) -> dict[str, Any]:
    return {"id": entry["id"], **{f: entry[f] for f in _FIELDS}, "created": entry["created"].isoformat()}


def clear() -> None:
    _memory.clear()
    with writing():
        JournalEntry.objects.all().delete()


def _maybe_prune(added: int = 1) -> None:
    global _prune_counter
    before = _prune_counter
    _prune_counter += added
    if before // 100 == _prune_counter // 100:
        return
    keep = get_settings().journal_max_entries
    found = list(JournalEntry.objects.order_by("-id").values_list("id", flat=True)[keep : keep + 1])
    if found:
        cutoff = found[0]
        with writing():
            # Batched so a large backlog never holds the write lock for long.
            while True:
                ids = list(JournalEntry.objects.filter(id__lte=cutoff).values_list("id", flat=True)[:500])
                if not ids:
                    break
                JournalEntry.objects.filter(id__in=ids).delete()
