"""The repository stands alone: no file cites a document or file that a clone does not have.

Decisions are cited by their anchors in docs/design.md, Volcano's behaviour by Volcano's own
files, Volcano's issues as volcano-sh/volcano#N. A section number of a document kept outside
the repository, a bare issue number, or a path beside the checkout means nothing to whoever
clones it, and a test that reads such a path fails there.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT

# Built from pieces, so that this file does not match its own patterns.
OUTSIDE = {
    "a section of an outside spec": re.compile(r"\b" + "SPEC" + r" [AB][0-9]"),
    "an issue number": re.compile(r"\b[Ii]" + r"ssues? [0-9]+\b"),
    "a path beside the checkout": re.compile(r"\.\." + "/shared"),
    "a folder beside the checkout": re.compile(r"parent / " + '"shared"'),
    "a section of an outside document": re.compile(r"\b(?:DESIGN|STYLE)" + " §"),
    "an outside document": re.compile(r"\b(?:SPEC|DESIGN|STYLE|VOLCANO-PLUGINS)" + r"\.md\b"),
}
VENDORED = "tests/volcano_examples/"
"""Volcano's own files, copied unchanged (their README is ours and is checked)."""


def repository_files() -> list[str]:
    """Every file of the checkout that git tracks or would track."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [
        name for name in listed if not name.startswith(VENDORED) or name == f"{VENDORED}README.md"
    ]


def outside_references(text: str) -> list[str]:
    """What in ``text`` cites something outside the repository, one entry per finding."""
    return [
        f"{what}: {match.group()!r}"
        for what, pattern in OUTSIDE.items()
        for match in pattern.finditer(text)
    ]


def test_no_file_cites_a_document_or_path_outside_the_repository() -> None:
    found: list[str] = []
    for name in repository_files():
        path = ROOT / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images and other binary files cite nothing
        for number, line in enumerate(text.splitlines(), 1):
            found.extend(f"{name}:{number}: {ref}" for ref in outside_references(line))
    assert found == [], "\n".join(found)


def test_the_check_sees_each_kind_of_outside_reference() -> None:
    """Each pattern matches the form it is for, and not a repository's own citation."""
    cited = {
        "SPEC" + " A8": 1,
        "issue" + " 23": 1,
        "Issue" + " 23": 1,
        "../" + "shared/volcano-examples": 1,
        'ROOT.parent / "' + 'shared"': 1,
        "DESIGN" + " §2": 1,
        "SPEC" + ".md Part A": 1,
        "docs/design.md#bounded-records": 0,
        "volcano-sh/volcano#2944": 0,
        "tests/volcano_examples/job.yaml": 0,
    }
    assert {text: len(outside_references(text)) for text in cited} == cited


def test_the_vendored_examples_say_where_they_came_from() -> None:
    readme = (ROOT / VENDORED / "README.md").read_text()
    assert "volcano-sh/volcano" in readme
    assert re.search(r"\b[0-9a-f]{40}\b", readme), "the commit the files came from"
    assert (
        "Apache License\n                           Version 2.0"
        in (ROOT / VENDORED / "LICENSE").read_text()
    )


def anchors(page: Path) -> set[str]:
    """The anchors a Markdown page's headings get (GitHub's rule: lower case, no punctuation)."""
    slugs = set()
    for heading in re.findall(r"^#+ (.*)$", page.read_text(), re.M):
        slugs.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return slugs


CITED_ANCHOR = re.compile(r"(?<![\w/.-])((?:docs/|\.\./)?[\w-]+\.md)#([\w-]+)")


def test_every_cited_anchor_of_a_page_exists() -> None:
    """A citation ``docs/design.md#bounded-records`` names a heading that is there."""
    missing: list[str] = []
    for name in repository_files():
        path = ROOT / name
        if not path.is_file() or path.suffix not in {".py", ".md", ".yaml", ".toml"}:
            continue
        for page, anchor in CITED_ANCHOR.findall(path.read_text(encoding="utf-8")):
            base = path.parent if path.suffix == ".md" and not page.startswith("docs/") else ROOT
            target = (base / page).resolve()
            if not target.is_file() and (ROOT / "docs" / page).is_file():
                target = ROOT / "docs" / page
            if not target.is_file():
                missing.append(f"{name}: {page}#{anchor} (no such page)")
            elif anchor not in anchors(target):
                missing.append(f"{name}: {page}#{anchor}")
    assert missing == [], "\n".join(missing)
