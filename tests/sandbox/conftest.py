"""The sandbox's own tests use the fixtures its pytest plugin gives users.

The plugin arrives through the ``pytest11`` entry point of an installed package (``make install``). In a
checkout that is not installed, the fixtures are imported here instead; never both, or the session would
start two sandboxes.
"""

from importlib.metadata import entry_points

_PLUGIN = "django_paycollect.sandbox.pytest_plugin"

if not any(entry.value == _PLUGIN for entry in entry_points(group="pytest11")):
    from django_paycollect.sandbox.pytest_plugin import (  # noqa: F401  (fixtures)
        paycollect_callback_receiver,
        paycollect_sandbox,
        paycollect_sandbox_server,
    )
