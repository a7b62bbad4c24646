"""A project with save receivers (make test runs it under its own settings, tests/receivers/settings.py):
django-simple-history keeps the history of ``Transaction``, and a test connects a global ``post_save``
receiver, as audit, history and search libraries do."""
