"""The HTTP edge: what the service sends us, read once and never trusted.

* :mod:`.views`: the callback endpoint and the browser return (with its status endpoint), mounted by
  ``django_paycollect.urls``;
* :mod:`.receive`: a callback's request read (token, client address, headers, body within its bound), refused
  or parsed, and handed to the callback ledger, then to the worker;
* :mod:`.returns`: the status a browser return shows, fetched from the service.
"""
