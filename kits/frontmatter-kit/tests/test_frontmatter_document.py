"""The front-matter reader: the documented YAML subset, and one clear reason for what breaks it."""

from __future__ import annotations

import pytest
from crab_frontmatter_kit import FrontMatterError, split


def test_plain_quoted_and_block_values():
    doc = split(
        "\ufeff---\n"
        "name: pdf\n"
        'description: "Say \\"hi\\" # not a comment"\n'
        "license: 'it''s MIT'\n"
        "short: plain # a comment\n"
        "folded: >\n  one\n  two\n\n"
        "literal: |\n  a\n  b\n"
        "metadata:\n  author: me\n  tags:\n    - x\n"
        "allowed-tools:\n  - Bash\n"
        "# a comment line\n"
        "---\n# Title\n\nbody text\n"
    )
    assert doc.fields == {
        "name": "pdf",
        "description": 'Say "hi" # not a comment',
        "license": "it's MIT",
        "short": "plain",
        "folded": "one two",
        "literal": "a\nb",
    }  # nested values (metadata, allowed-tools) are skipped
    assert doc.body == "# Title\n\nbody text"


def test_an_indented_line_continues_a_plain_value():
    doc = split("---\ndescription: Extract text\n  from PDF files # why\nname: pdf\n---\n")
    assert doc.fields == {"description": "Extract text from PDF files", "name": "pdf"}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("# no front matter\n", "no front matter: the file must start with a --- line"),
        ("", "no front matter"),
        ("---\nname: x\ndescription: y\n", "the front matter is not closed by a --- line"),
        ("---\nname x\n---\n", "line 2: expected `key: value`, found 'name x'"),
        ('---\nname: "x\n---\n', "line 2: a double-quoted value is not closed"),
        ("---\n  indented: first\n---\n", "line 2: an indented line before any key"),
        ("---\n{a: b}\n---\n", "line 2: expected `key: value`"),
    ],
)
def test_what_breaks_the_subset_names_the_line(text, reason):
    with pytest.raises(FrontMatterError) as caught:
        split(text)
    assert str(caught.value).startswith(reason)


def test_lists_flow_and_block_and_comma_separated_names():
    doc = split(
        "---\n"
        "name: reviewer\n"
        "tools: [read, \"grep\", 'find']\n"
        "skills:\n  - one\n  - 'two'\n"
        "model-tools: Read, Grep Glob\n"
        "empty: []\n"
        "---\nbody\n"
    )
    assert doc.lists == {"tools": ("read", "grep", "find"), "skills": ("one", "two"), "empty": ()}
    assert doc.names("tools") == ("read", "grep", "find")
    assert doc.names("model-tools") == ("Read", "Grep", "Glob")
    assert doc.names("empty") == () and doc.names("missing") is None
    assert "tools" not in doc.fields and doc.fields["name"] == "reviewer"


def test_a_nested_mapping_is_skipped_not_read_as_a_list():
    doc = split("---\nmetadata:\n  tags:\n    - x\nname: a\n---\n")
    assert doc.lists == {} and doc.fields == {"name": "a"}


def test_the_missing_front_matter_error_names_the_expected_keys():
    with pytest.raises(FrontMatterError, match=r"--- line, then name: and description:$"):
        split("just text", expect=("name", "description"))
    with pytest.raises(FrontMatterError, match=r"must start with a --- line$"):
        split("just text")
