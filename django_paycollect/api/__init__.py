"""A REST API for single-page and mobile checkouts, built with Django REST framework on the service layer.

Mount it with ``path("api/", include("django_paycollect.api.urls"))``. The device talks to the site, the site
talks to the service: the community's API key never leaves the server, and what a payment costs is resolved
on the server from a payable reference (``PAYCOLLECT["PAYABLE_RESOLVER"]``, see :mod:`.payables`). The
OpenAPI schema needs the ``api`` extra (drf-spectacular); the API itself does not.
"""
