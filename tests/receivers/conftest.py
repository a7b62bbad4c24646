from django.conf import settings

# Only under tests/receivers/settings.py (make test runs it so): elsewhere there is no history to read.
if "tests.receivers" not in settings.INSTALLED_APPS:
    collect_ignore_glob = ["test_*.py"]
