"""Local Sphinx helpers of the django-paycollect docs.

* ``{screenshot} name.png`` shows ``_static/screenshots/name.png`` as a figure (its content is the
  caption) when the file exists, and a short note when it does not, so a build never fails on a
  screenshot that has not been taken yet. ``{screenshot-gallery}`` shows every other image of that
  folder that the page has not shown yet.
* ``{pcdefault}`KEY``` renders the default of ``PAYCOLLECT[KEY]`` from ``conf.DEFAULTS``, so the
  settings reference never states a stale default.
* Completeness checks, reported as warnings (errors under ``-W``): every key of ``conf.DEFAULTS`` and
  every system check id has a section in the settings reference; every signal, Celery task and
  management command of the app is named on its page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.directives.patches import Figure
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

SCREENSHOTS = Path("_static") / "screenshots"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")
PACKAGE = Path(__file__).resolve().parents[2] / "django_paycollect"


def _shown(env: Any) -> set[str]:
    return env.temp_data.setdefault("paycollect_screenshots_shown", set())


class Screenshot(SphinxDirective):
    """A screenshot from ``_static/screenshots/`` with its caption, or a note when it is missing."""

    required_arguments = 1
    has_content = True
    option_spec = {"alt": directives.unchanged, "width": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        _shown(self.env).add(name)
        path = Path(self.env.srcdir) / SCREENSHOTS / name
        if not path.is_file():
            note = nodes.paragraph(classes=["paycollect-missing-screenshot"])
            note += nodes.Text(f"(No screenshot {name} in this build.)")
            return [note]
        options: dict[str, Any] = {"class": ["paycollect-screenshot"], "alt": self.options.get("alt", name)}
        if "width" in self.options:
            options["width"] = self.options["width"]
        figure = Figure(
            "figure",
            [f"/{SCREENSHOTS.as_posix()}/{name}"],
            options,
            self.content,
            self.lineno,
            self.content_offset,
            self.block_text,
            self.state,
            self.state_machine,
        )
        return figure.run()


class ScreenshotGallery(SphinxDirective):
    """Every image of ``_static/screenshots/`` the page has not shown yet, captioned by its file name."""

    def run(self) -> list[nodes.Node]:
        folder = Path(self.env.srcdir) / SCREENSHOTS
        shown = _shown(self.env)
        found = sorted(
            p.name for p in folder.glob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.name not in shown
        )
        out: list[nodes.Node] = []
        for name in found:
            shown.add(name)
            caption = Path(name).stem.replace("-", " ").replace("_", " ").capitalize()
            figure = Figure(
                "figure",
                [f"/{SCREENSHOTS.as_posix()}/{name}"],
                {"class": ["paycollect-screenshot"], "alt": caption},
                [caption],
                self.lineno,
                self.content_offset,
                self.block_text,
                self.state,
                self.state_machine,
            )
            out += figure.run()
        return out


def pcdefault_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = None
) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    from django_paycollect.conf import DEFAULTS

    if text not in DEFAULTS:
        message = inliner.reporter.warning(f"PAYCOLLECT has no key {text!r} in conf.DEFAULTS", line=lineno)
        return [nodes.literal(rawtext, "?")], [message]
    return [nodes.literal(rawtext, repr(DEFAULTS[text]))], []


# --- completeness checks -------------------------------------------------------------------------------


def _check_ids() -> set[str]:
    source = (PACKAGE / "checks.py").read_text()
    return {f"paycollect.{code}" for code in re.findall(r"\b([EW]\d{3})\b", source)}


def _task_names() -> set[str]:
    source = "\n".join(path.read_text() for path in sorted((PACKAGE / "tasks").glob("*.py")))
    return set(re.findall(r"""shared_task\(\s*name=["']([^"']+)["']""", source))


def _commands() -> set[str]:
    folder = PACKAGE / "management" / "commands"
    return {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}


def _expected(docname: str) -> dict[str, str]:
    """What a page must name: {text to find: what it is}."""
    if docname == "settings":
        from django_paycollect.conf import DEFAULTS

        wanted = {f"`{key}`": f"PAYCOLLECT key {key}" for key in DEFAULTS}
        wanted |= {check: f"system check {check}" for check in _check_ids()}
        return wanted
    if docname == "signals":
        from django_paycollect.signals import ALL_SIGNALS

        return {f"`{name}`": f"signal {name}" for name in ALL_SIGNALS}
    if docname == "celery":
        wanted = {f"`{task}`": f"Celery task {task}" for task in _task_names()}
        wanted |= {command: f"management command {command}" for command in _commands()}
        return wanted
    return {}


def check_completeness(app: Sphinx, docname: str, source: list[str]) -> None:
    for text, what in sorted(_expected(docname).items()):
        if text not in source[0]:
            logger.warning("%s is not documented on this page", what, location=docname)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("screenshot", Screenshot)
    app.add_directive("screenshot-gallery", ScreenshotGallery)
    app.add_role("pcdefault", pcdefault_role)
    app.connect("source-read", check_completeness)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
