#!/usr/bin/env python
"""The club site's manage.py: ``python example_project/manage.py runserver`` (see README.md)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clubsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
