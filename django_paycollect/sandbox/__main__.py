"""Standalone runner: ``python -m django_paycollect.sandbox [--host 127.0.0.1] [--port 8001] [--db FILE]``.

Seeds on first start and prints the base URL, community id, API key, variable_amount_id and basic
credentials (``--info-file`` writes them as JSON too); ``--redirect-url`` and ``--callback-url`` set the
seeded API payment's URLs, as the merchant dashboard does. Refuses to start (exit status 2) when
PAYCOLLECT_DEPLOYMENT=live.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from . import live_deployment_reason


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m django_paycollect.sandbox",
        description="Run the Payment Collection Service sandbox (development and tests only).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8001, help="port (default 8001; 0 picks a free one)")
    parser.add_argument(
        "--db",
        default="paycollect-sandbox.sqlite3",
        help="SQLite file (default ./paycollect-sandbox.sqlite3)",
    )
    parser.add_argument(
        "--prefix", default="", help="URL prefix of the sandbox, e.g. sandbox (default: none)"
    )
    parser.add_argument(
        "--callback-retry-delays",
        default=None,
        help="comma-separated seconds between callback attempts (default 1,5,30,120,600)",
    )
    parser.add_argument(
        "--language",
        default="en-us",
        help="language of the answers to clients that ask for none (default en-us; ar for Arabic); "
        "browsers get the pages in the language they ask for",
    )
    parser.add_argument(
        "--redirect-url",
        default=None,
        help="set the redirect URL of the seeded API payment (the merchant dashboard's setting): your site's "
        "return view, e.g. http://127.0.0.1:8000/payments/return/",
    )
    parser.add_argument(
        "--callback-url",
        default=None,
        help="set the callback URL of the seeded API payment: your site's callback view with its token",
    )
    parser.add_argument("--info-file", default=None, help="also write the printed details to this JSON file")
    parser.add_argument("--quiet", action="store_true", help="do not log each request")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    reason = live_deployment_reason()
    if reason is not None:
        print(f"Refusing to start: {reason}", file=sys.stderr)
        return 2
    args = _parse(argv)

    # The runner always uses its own settings, whatever the surrounding shell has configured.
    os.environ["DJANGO_SETTINGS_MODULE"] = "django_paycollect.sandbox.settings"
    os.environ["PAYCOLLECT_SANDBOX_DB"] = str(Path(args.db).resolve())
    os.environ["PAYCOLLECT_SANDBOX_PREFIX"] = args.prefix.strip("/")
    os.environ["PAYCOLLECT_SANDBOX_LANGUAGE"] = args.language
    if args.callback_retry_delays is not None:
        os.environ["PAYCOLLECT_SANDBOX_CALLBACK_RETRY_DELAYS"] = args.callback_retry_delays

    import django

    django.setup()

    from django.core.handlers.wsgi import WSGIHandler
    from django.core.management import call_command
    from django.db import connections
    from django.db.backends.signals import connection_created

    from . import callbacks, seed
    from .server import make_server

    connection_created.connect(_sqlite_pragmas)
    call_command("migrate", verbosity=0, interactive=False)

    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"Warning: listening on {args.host}: anyone who can reach it can use the control API "
            "(reset, faults, clock) and read the sandbox credentials.",
            file=sys.stderr,
        )
    server = make_server(args.host, args.port, quiet=args.quiet)
    host, port = str(server.server_address[0]), int(server.server_address[1])
    prefix = args.prefix.strip("/")
    shown_host = f"[{host}]" if ":" in str(host) else host
    base_url = f"http://{shown_host}:{port}" + (f"/{prefix}" if prefix else "")

    identity = seed.ensure_seeded(base_url)
    seed.set_start_urls(redirect_url=args.redirect_url, callback_url=args.callback_url)
    connections.close_all()
    info: dict[str, Any] = {
        "base_url": base_url,
        "community_id": identity["community_id"],
        "api_key": identity["api_key"],
        "variable_amount_id": identity["variable_amount_id"],
        "member_variable_amount_id": identity.get("member_variable_amount_id"),
        "basic_username": identity["basic_username"],
        "basic_password": identity["basic_password"],
        "dashboard_url": f"{base_url}/_sandbox/",
        "control_url": f"{base_url}/_control/",
        "db": os.environ["PAYCOLLECT_SANDBOX_DB"],
        "pid": os.getpid(),
    }
    if args.info_file:
        tmp = Path(args.info_file + ".tmp")
        tmp.write_text(json.dumps(info))
        # Renamed into place so a reader never sees half a file.
        tmp.replace(args.info_file)
    print(
        "Payment Collection Service sandbox (NOT a live service)\n"
        f"  base URL           {info['base_url']}\n"
        f"  community id       {info['community_id']}\n"
        f"  API key            {info['api_key']}\n"
        f"  variable_amount_id {info['variable_amount_id']}\n"
        f"  basic credentials  {info['basic_username']}:{info['basic_password']}\n"
        f"  dashboard          {info['dashboard_url']}\n"
        f"  database           {info['db']}\n",
        flush=True,
    )

    callbacks.ensure_worker()
    server.set_app(WSGIHandler())
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _sqlite_pragmas(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            # WAL lets page views and the delivery thread read while a request writes; NORMAL sync is
            # durable enough for a sandbox and keeps each commit cheap.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")


if __name__ == "__main__":
    sys.exit(main())
