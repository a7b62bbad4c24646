"""django-paycollect: collect payments through the Payment Collection Service from a Django site.

The version lives here and only here; ``setup.cfg`` reads it.
Importing this package imports nothing from Django, so ``django_paycollect.client``
works in plain Python.
"""

__version__ = "0.1.0.dev0"
