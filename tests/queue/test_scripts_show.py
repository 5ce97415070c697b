"""What a notebook prints of a script: the file's own lines first, then each piece it includes."""

from __future__ import annotations

from collections import Counter

import pytest

from echomq_teach import scripts


@pytest.mark.parametrize("name", scripts.names())
def test_the_listing_opens_with_the_header_and_holds_every_line_the_node_runs(name: str) -> None:
    shown = scripts.show(name)
    script = scripts.load(name)
    opening = [line for line in shown.splitlines() if not line.startswith("#!")][:4]
    assert opening == script.header  # what it does, KEYS, ARGV, reply: first (after a flags line)
    # every line the node runs is printed, as often as it runs (the include lines stay, as the file has them)
    ran = Counter(line for line in script.source.splitlines())
    printed = Counter(line for line in shown.splitlines())
    missing = ran - printed
    assert not missing, f"@{name}: lines the node runs that the listing leaves out: {list(missing)[:3]}"


def test_an_included_piece_comes_after_the_scripts_own_lines() -> None:
    shown = scripts.show("retry").splitlines()
    own_start = shown.index("local p = ARGV[6]")
    piece = next(i for i, line in enumerate(shown) if line.startswith("local function child_death"))
    assert own_start < piece
    assert "-- @include child_death" in shown[:own_start]  # where the node splices it in


def test_an_unknown_script_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match="no script @nope"):
        scripts.show("nope")
