"""The benchmark dashboard, offline: `python -m benchtools.dashboard` runs `asv publish` (every saved
result into asv's html_dir, .asv/html) and installs asv-tachyon's page over asv's own.

asv 0.6's index.html loads jQuery, flot, bootstrap, stupidtable and md5 from CDNs, so on a machine
without internet the page is blank. asv-tachyon (the `bench` extra; by asv's maintainer) is a page
over the same published data whose scripts, styles and fonts all ship in its wheel. After
installing it this command checks the result: every <script>, <link>, <img> and the like of every
page, and every url() and @import of every stylesheet, must point inside the folder; otherwise it
fails and names them. View it with `asv preview` (a local web server: browsers do not let a page
opened from a file load its data).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

from benchtools.asv_project import REPOSITORY, asv, html_dir

# Attributes through which a page loads something, by tag.
LOADING_ATTRIBUTES = {
    "script": ("src",),
    "link": ("href",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "source": ("src", "srcset"),
    "audio": ("src",),
    "video": ("src", "poster"),
    "embed": ("src",),
    "object": ("data",),
    "track": ("src",),
}
CSS_REFERENCES = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")
OFF_MACHINE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)  # http://, https://, //host


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and name in LOADING_ATTRIBUTES.get(tag, ()):
                self.found += (
                    [part.split()[0] for part in value.split(",") if part.strip()] if name == "srcset" else [value]
                )


def off_machine_references(folder: Path) -> list[str]:
    """Every reference of the pages (*.html) and stylesheets (*.css) under `folder` that loads
    something from another machine, as "file: reference"."""
    found = []
    for page in sorted(folder.rglob("*.html")):
        parser = _References()
        parser.feed(page.read_text(errors="replace"))
        found += [f"{page.relative_to(folder)}: {ref}" for ref in parser.found if OFF_MACHINE.match(ref)]
    for sheet in sorted(folder.rglob("*.css")):
        for match in CSS_REFERENCES.finditer(sheet.read_text(errors="replace")):
            ref = match.group(1) or match.group(2)
            if OFF_MACHINE.match(ref):
                found.append(f"{sheet.relative_to(folder)}: {ref}")
    return found


def install_offline_page(folder: Path) -> None:
    """asv-tachyon's page over asv's published `folder` (keeping its data: index.json, graphs/).

    Error handling: SystemExit naming the missing package, or with asv-tachyon's message."""
    if importlib.util.find_spec("asv_tachyon") is None:
        raise SystemExit("the offline dashboard needs asv-tachyon: pip install -e '.[bench]'")
    done = subprocess.run(
        [sys.executable, "-m", "asv_tachyon", "install", "--no-backup", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"asv-tachyon install failed: {done.stderr.strip() or done.stdout.strip()}")


def mark_directions(folder: Path) -> None:
    """Says in the published index.json which benchmarks are better higher (a rate: a unit per
    second) and which lower (everything else: times, ms, ratios to the baseline): asv-tachyon
    reads `less_is_better` and otherwise takes every track_ benchmark for a rate."""
    index = folder / "index.json"
    data = json.loads(index.read_text())
    for benchmark in data["benchmarks"].values():
        benchmark["less_is_better"] = not str(benchmark.get("unit", "")).endswith("/s")
    index.write_text(json.dumps(data))


def publish(project: Path) -> Path:
    """`asv publish` in `project`, then the offline page; the dashboard's folder.

    Error handling: SystemExit if asv publish fails or a page still loads from another machine."""
    if asv(project, "publish") != 0:
        raise SystemExit("`asv publish` failed: see its output above (no results yet? run asv run first)")
    folder = html_dir(project)
    install_offline_page(folder)
    mark_directions(folder)
    problems = off_machine_references(folder)
    if problems:
        raise SystemExit("the dashboard still loads from other machines:\n  " + "\n  ".join(problems))
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("`", ""))
    parser.add_argument("--project", type=Path, default=REPOSITORY, help="the asv project (default: this repository)")
    args = parser.parse_args(argv)
    folder = publish(args.project)
    print(
        f"dashboard (offline) in {folder}: view it with `asv preview` in {args.project}, "
        "then open the address it prints"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
