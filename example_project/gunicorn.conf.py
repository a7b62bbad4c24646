"""gunicorn's settings for the club site: ``gunicorn -c gunicorn.conf.py clubsite.wsgi`` from example_project/
(gunicorn reads ``./gunicorn.conf.py`` by itself when started there).

The access log writes every request's path, and the callback URL's path holds its secret token: the logger
class below writes a callback's path with the token replaced by ``[redacted]`` (the payment app's
``redact_callback_path`` decides what is a callback URL and where its token is), in every spelling the access
log format may use (``%(r)s``, ``%(U)s``, ``%({raw_uri}e)s``...). The request itself is still logged.

Environment: ``GUNICORN_BIND`` (``127.0.0.1:8000``), ``GUNICORN_WORKERS`` (``2``), ``GUNICORN_THREADS``
(``4``).
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from gunicorn.glogging import Logger

wsgi_app = "clubsite.wsgi:application"
bind = [os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")]
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
# Threads: a page calling the mounted sandbox waits for it while the sandbox's callback calls the site back.
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# Above the payment app's read TIMEOUT (30 s): a view calling the service may wait that long.
timeout = 60
graceful_timeout = 30
# Both logs to the console: systemd's journal or the container's log collects them.
accesslog = "-"
errorlog = "-"


class CallbackTokenRedactingLogger(Logger):
    """gunicorn's logger, whose access log never writes a callback URL's token."""

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: timedelta) -> dict[str, Any]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        # Imported on the first request, in the worker, once Django is set up (the master never needs it).
        from django_paycollect.intake.receive import redact_callback_path

        script = environ.get("SCRIPT_NAME", "")
        spellings: dict[str, str] = {}  # each spelling of the path -> the same without the token
        for path in (environ.get("PATH_INFO", ""), urlsplit(environ.get("RAW_URI", "")).path):
            within = path[len(script) :] if script and path.startswith(script) else path
            redacted = redact_callback_path(within)
            if redacted != within:
                spellings[path] = path[: len(path) - len(within)] + redacted
        if not spellings:
            return atoms
        for key, value in atoms.items():
            if isinstance(value, str):
                for path, redacted in spellings.items():
                    value = value.replace(path, redacted)
                atoms[key] = value
        return atoms


logger_class = CallbackTokenRedactingLogger
