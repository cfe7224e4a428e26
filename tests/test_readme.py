"""The README's first section gives a fresh machine exactly two commands: ``make run`` (set up and run the
marketplace) and ``make test`` (set up and pass the tests), both targets of the Makefile."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def first_section() -> str:
    text = (ROOT / "README.md").read_text()
    body = text.split("\n## ", 1)[0]  # up to the first second-level heading
    assert body.startswith("# "), "the README opens with its title"
    return body


def test_the_first_section_gives_exactly_make_run_and_make_test() -> None:
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", first_section(), flags=re.S)
    commands = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    assert [c for c in commands if c] == ["make run", "make test"]


def test_both_commands_are_targets_that_set_up_first() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in ("run", "test"):
        rule = re.search(rf"^{target}:([^\n]*)$", makefile, flags=re.M)
        assert rule is not None, f"the Makefile has a {target!r} target"
        assert "setup" in rule.group(1).split(), f"`make {target}` depends on setup (a fresh machine has no .venv)"
