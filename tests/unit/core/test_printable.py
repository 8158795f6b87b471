"""Text as a terminal may show it: control characters escaped, as JSON reads them back."""

from __future__ import annotations

import json

from vcbus.core.printable import cell, printable


def test_control_characters_are_escaped_when_printed_newline_and_tab_only_outside_cells():
    assert printable("a\x1b[2Jb\n\tc\x9b\x7f\u202e") == ("a\\u001b[2Jb\n\tc\\u009b\\u007f\\u202e")
    assert cell("a\nb\tc") == "a\\u000ab\\u0009c"
    assert printable("plain é 名前") == "plain é 名前"


def test_an_escaped_string_in_json_reads_back_as_the_original_when_decoded():
    original = "queue \x1b[2J\x9b\x7f\u202e"
    assert json.loads(printable(json.dumps(original, ensure_ascii=False))) == original
