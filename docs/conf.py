"""Sphinx configuration of the django-paycollect documentation.

Built in CI with warnings as errors: ``make docs`` (``sphinx-build -W --keep-going -b html docs
docs/_build/html``). Pages are Markdown (MyST); the client reference comes from the docstrings.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS), str(DOCS / "_ext")]

# The client needs no Django; the service layer, signals and tasks do. A minimal settings module
# (docs/_settings.py) makes them importable for autodoc.
os.environ["DJANGO_SETTINGS_MODULE"] = "_settings"
import django  # noqa: E402

django.setup()

import django_paycollect  # noqa: E402

project = "django-paycollect"
author = "django-paycollect contributors"
copyright = "django-paycollect contributors"
release = django_paycollect.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
    "paycollect_docs",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []

myst_enable_extensions = ["colon_fence", "deflist"]
# Links such as [Faults](#faults) inside a page, and to other pages' sections.
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
autodoc_default_options = {"exclude-members": "__init__, __new__"}

# Furo: navigation on the left, "on this page" on the right, a readable single column on a phone. Its page
# contents fold into an icon below 1312 px; _static/paycollect.css keeps them beside the text from 1200 px.
# tests/browser/test_docs.py checks the quick start at 390, 1280 and 1440 px.
html_theme = "furo"
html_title = "django-paycollect"
html_static_path = ["_static"]
html_css_files = ["paycollect.css"]
html_theme_options = {"navigation_with_keys": True, "top_of_page_buttons": []}
html_show_sourcelink = False
html_copy_source = False

# Copy buttons on code blocks copy the commands, without "$ " prompts or the output under them.
copybutton_prompt_text = r"\$ |>>> |\.\.\. "
copybutton_prompt_is_regexp = True
copybutton_exclude = ".linenos, .gp, .go"

# No network at build time: nothing is fetched (no intersphinx inventories).
linkcheck_ignore = [r".*"]
