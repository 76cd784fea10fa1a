"""Every command of the user guide's ```bash blocks (the README and docs/, not docs/dev) is placed in
tests/unit/docs/commands.py: run as read from the page, run by a named test, or said not to run here and why. A new
or changed command fails here until it is placed; a named test must exist. Prints the count of each."""

from __future__ import annotations

import collections
import pathlib
import shlex

from tests.e2e.test_examples import page_commands
from tests.support.paths import ROOT
from tests.unit.docs.commands import COMMANDS, NOT_RUN, RUN

PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def on_the_pages() -> list[tuple[str, str]]:
    return [(page, shlex.join(words)) for page in PAGES for words in page_commands(page)]


def test_every_command_of_the_user_guide_is_placed() -> None:
    found = on_the_pages()
    unplaced = [c for c in found if c not in COMMANDS]
    assert unplaced == [], "commands of the user guide placed nowhere in tests/unit/docs/commands.py"
    gone = [c for c in COMMANDS if c not in found]
    assert gone == [], "commands.py places commands no page has any more"
    kinds = collections.Counter(
        "run" if COMMANDS[c] == RUN else "not run" if COMMANDS[c].startswith(NOT_RUN) else "by a test" for c in found
    )
    print(f"\n{len(found)} commands on {len(PAGES)} pages: {dict(kinds)}")


def test_each_named_test_exists() -> None:
    for where in set(COMMANDS.values()):
        if where == RUN or where.startswith(NOT_RUN):
            continue
        path = where.split(" ", 1)[0]
        assert (ROOT / path).exists() or pathlib.Path(path).name == "run", where
