"""Each benchmark's task README follows lm-evaluation-harness's task README layout.

Sections checked, per ``tasks/<benchmark>/README.md``:
- ``Paper`` (with a homepage line) and ``Citation``, whose one ``bibtex`` block is a well-formed entry;
- ``Groups, Tags, and Tasks``, which names every group, tag and task the folder's YAMLs define;
- ``Checklist``, whose answers are ticked or left open and whose links into ``docs/`` resolve (file and anchor);
- ``Changelog``, last, which links CHANGELOG.md's "Scorer versions" and states each task's current
  ``metadata.version`` as the YAMLs set it (``include:`` resolved as lmms-eval resolves it).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ("mme_unify", "unig2u", "uni_mmmu", "gapeval")
TEMPLATE = ("Paper", "Citation", "Groups, Tags, and Tasks", "Checklist", "Changelog")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*```")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
DOC_SPAN = re.compile(r"`(docs/[^`\s]+)`")
CHECKBOX = re.compile(r"^\s*[-*] \[([ xX])\] ", re.M)
VERSION_ITEM = re.compile(r"^\s*[-*]\s+`(\d+(?:\.\d+)*)`:\s*(.*)$")
EVERY_OTHER = re.compile(r"\bevery (?:other )?task and group\b")


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads lmms-eval's ``!function`` (and any other ``!`` tag) as None."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def load_task_yaml(path: Path) -> dict:
    """One YAML with its ``include:`` chain merged as lmms-eval merges it: the file's own keys win, and of the
    included files the first listed wins (top-level keys replaced, not merged)."""
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    includes = config.pop("include", [])
    merged: dict = {}
    for name in reversed([includes] if isinstance(includes, str) else list(includes)):
        merged.update(load_task_yaml(path.parent / name))
    merged.update(config)
    return merged


def defined_names(benchmark: str) -> dict[str, str | None]:
    """Every group, tag and task the folder's ``*.yaml`` files define, with its ``metadata.version`` (None for a
    tag, which has no version of its own)."""
    names: dict[str, str | None] = {}
    for path in sorted((ROOT / "tasks" / benchmark).glob("*.yaml")):
        config = load_task_yaml(path)
        version = str((config.get("metadata") or {}).get("version"))
        for key in ("group", "task", "tag"):
            value = config.get(key)
            if key == "task" and "group" in config:
                continue  # a group's member list, defined elsewhere
            for name in [value] if isinstance(value, str) else value or []:
                if isinstance(name, str) and key == "tag":
                    names.setdefault(name, None)
                elif isinstance(name, str):
                    names[name] = version
    return names


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of each Markdown heading outside fenced blocks."""
    found, fenced = [], False
    for index, line in enumerate(text.splitlines()):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := HEADING.match(line)):
            found.append((index, len(match.group(1)), match.group(2)))
    return found


def section(text: str, title: str) -> str:
    """The body under the one heading called ``title``, up to the next heading of the same or a higher level."""
    lines, marks = text.splitlines(), headings(text)
    hits = [i for i, (_, _, name) in enumerate(marks) if name.lower() == title.lower()]
    assert len(hits) == 1, f"expected one heading {title!r}, found {len(hits)}"
    start, level, _ = marks[hits[0]]
    end = next((line for line, lvl, _ in marks[hits[0] + 1 :] if lvl <= level), len(lines))
    return "\n".join(lines[start + 1 : end])


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(title) for _, _, title in headings(path.read_text(encoding="utf-8"))}


def bibtex_problems(block: str) -> list[str]:
    """What keeps ``block`` from being one well-formed BibTeX entry with a title and an eprint or url."""
    problems, depth = [], 0
    for char in block:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            problems.append("a closing brace before its opening one")
            break
    if depth > 0:
        problems.append(f"{depth} unclosed brace(s)")
    lines = block.strip().splitlines()
    if not lines or not re.fullmatch(r"@[A-Za-z]+\{[^\s,{}]+,", lines[0].strip()):
        problems.append("first line is not `@type{key,`")
    if not lines or lines[-1].strip() != "}":
        problems.append("last line is not `}`")
    fields = {m.group(1).lower(): m.group(2) for m in re.finditer(r"^\s*(\w+)\s*=\s*\{(.*)\},?\s*$", block, re.M)}
    if not fields.get("title"):
        problems.append("no title field")
    if not (fields.get("eprint") or fields.get("url")):
        problems.append("no eprint or url field")
    return problems


def readme(benchmark: str) -> tuple[Path, str]:
    path = ROOT / "tasks" / benchmark / "README.md"
    return path, path.read_text(encoding="utf-8")


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_template_sections_in_order_with_changelog_last(benchmark):
    _, text = readme(benchmark)
    titles = [title.lower() for _, _, title in headings(text)]
    positions = []
    for title in TEMPLATE:
        assert title.lower() in titles, f"{benchmark}: no section {title!r}"
        positions.append(titles.index(title.lower()))
    assert positions == sorted(positions), f"{benchmark}: sections out of the template's order"
    assert titles[-1] == "changelog", f"{benchmark}: Changelog is not the last section"


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_paper_names_a_homepage(benchmark):
    paper = section(readme(benchmark)[1], "Paper")
    assert re.search(r"Homepage:.*https?://", paper), f"{benchmark}: no `Homepage:` line with an address"


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_citation_is_one_wellformed_bibtex_entry(benchmark):
    citation = section(readme(benchmark)[1], "Citation")
    blocks = re.findall(r"^```bibtex\n(.*?)^```", citation, re.M | re.S)
    assert len(blocks) == 1, f"{benchmark}: expected one ```bibtex block, found {len(blocks)}"
    assert bibtex_problems(blocks[0]) == []
    eprint = re.search(r"^\s*eprint\s*=\s*\{([^}]*)\}", blocks[0], re.M)
    assert eprint and re.fullmatch(r"\d{4}\.\d{4,5}", eprint.group(1)), f"{benchmark}: eprint is not an arXiv id"


def test_bibtex_check_rejects_broken_entries():
    good = "@misc{key2025,\n  title = {A {B} C},\n  eprint = {2504.03641},\n}"
    assert bibtex_problems(good) == []
    assert bibtex_problems(good.replace("{B}", "{B")) == ["1 unclosed brace(s)"]
    assert "first line is not `@type{key,`" in bibtex_problems(good.replace("key2025,", "key 2025"))
    assert bibtex_problems(good.replace("title", "note")) == ["no title field"]
    assert bibtex_problems(good.replace("eprint", "note")) == ["no eprint or url field"]


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_groups_tags_and_tasks_names_every_yaml_definition(benchmark):
    names = defined_names(benchmark)
    assert any(name == benchmark for name in names)  # the YAML scan sees the folder
    listed = section(readme(benchmark)[1], "Groups, Tags, and Tasks")
    missing = sorted(name for name in names if f"`{name}`" not in listed)
    assert not missing, f"{benchmark}: defined in the YAMLs but not named in the section: {missing}"


def test_yaml_loader_resolves_includes_and_ignores_function_tags(tmp_path):
    (tmp_path / "_a_yaml").write_text("class: !function m.C\nmetadata:\n  version: 1.0\nx: a\n")
    (tmp_path / "_b_yaml").write_text("x: b\ny: b\n")
    (tmp_path / "t.yaml").write_text("include: [_a_yaml, _b_yaml]\ntask: t\nmetadata:\n  version: 4.0\n")
    expected = {"class": None, "x": "a", "y": "b", "task": "t", "metadata": {"version": 4.0}}
    assert load_task_yaml(tmp_path / "t.yaml") == expected  # the file over its includes, the first include first


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_checklist_is_answered_and_its_docs_links_resolve(benchmark):
    path, text = readme(benchmark)
    checklist = section(text, "Checklist")
    assert len(CHECKBOX.findall(checklist)) >= 6, f"{benchmark}: fewer than the six checklist questions answered"
    targets = [(path.parent, t) for t in LINK.findall(checklist) if "docs/" in t and "://" not in t]
    targets += [(ROOT, t) for t in DOC_SPAN.findall(checklist)]
    assert any("docs/fidelity" in t for _, t in targets), f"{benchmark}: the checklist points to no fidelity note"
    broken = []
    for base, target in targets:
        file, _, anchor = target.partition("#")
        resolved = (base / file).resolve()
        if not resolved.is_file():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{benchmark}: {broken}"


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_changelog_links_scorer_versions_and_states_each_current_version(benchmark):
    path, text = readme(benchmark)
    changelog = section(text, "Changelog")
    links = [t for t in LINK.findall(changelog) if t.endswith("CHANGELOG.md#scorer-versions")]
    assert links, f"{benchmark}: no link to CHANGELOG.md#scorer-versions"
    for link in links:
        target = (path.parent / link.partition("#")[0]).resolve()
        assert target == ROOT / "CHANGELOG.md" and "scorer-versions" in anchors(target)

    items: list[tuple[str, str]] = []  # (version, its list item's text with continuation lines joined)
    for line in changelog.splitlines():
        if match := VERSION_ITEM.match(line):
            items.append((match.group(1), match.group(2)))
        elif items and line.startswith((" ", "\t")) and line.strip():
            items[-1] = (items[-1][0], f"{items[-1][1]} {line.strip()}")
    names = {name: version for name, version in defined_names(benchmark).items() if version is not None}
    stated, default = {}, None
    for version, item in items:
        if EVERY_OTHER.search(item):
            assert default is None, f"{benchmark}: two 'every other' versions"
            default = version
        for name in re.findall(r"`([^`]+)`", item):
            assert name in names, f"{benchmark}: the Changelog names {name!r}, which no YAML defines"
            stated[name] = version
    wrong = {
        name: (stated.get(name, default), actual)
        for name, actual in names.items()
        if stated.get(name, default) != actual
    }
    assert not wrong, f"{benchmark}: name: (README, YAML) versions differ: {wrong}"
