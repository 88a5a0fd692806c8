"""Reading a message's or tool result's parts: text, images, and whether every part was understood."""

from __future__ import annotations

from types import SimpleNamespace

from scalpel_desktop.wire.content_parts import (
    describe_parts,
    lead_texts,
    message_texts,
    parse_arguments,
)

TEXT, IMAGE = ("text",), ("image",)


def test_strings_and_none_are_understood_text():
    assert describe_parts("out", TEXT, IMAGE) == ("out", 0, True)
    assert describe_parts(None, TEXT, IMAGE) == ("", 0, True)
    assert describe_parts("", TEXT, IMAGE) == ("", 0, True)


def test_text_parts_are_joined_by_newlines_and_images_counted():
    parts = [{"type": "text", "text": "a"}, {"type": "image", "source": {}}, {"type": "text", "text": "b"},
             {"type": "image", "source": {}}]
    assert describe_parts(parts, TEXT, IMAGE) == ("a\nb", 2, True)


def test_any_other_part_makes_it_not_understood():
    for odd in ({"type": "tool_reference", "tool_name": "X"}, {"type": "document"}, {"type": "text"},
                {"type": "text", "text": 3}, "loose string", None):
        text, _, understood = describe_parts([{"type": "text", "text": "a"}, odd], TEXT, IMAGE)
        assert text == "a" and not understood, odd


def test_the_format_names_its_own_parts():
    chat = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}]
    assert describe_parts(chat, ("text",), ("image_url",)) == ("a", 1, True)
    assert describe_parts(chat, TEXT, IMAGE) == ("a", 0, False)  # image_url is not an Anthropic part


def test_a_dict_or_number_content_is_not_understood():
    assert describe_parts({"type": "text", "text": "a"}, TEXT, IMAGE) == ("", 0, False)
    assert describe_parts(5, TEXT, IMAGE) == ("", 0, False)


def test_message_texts():
    assert message_texts("hi") == ["hi"]
    assert message_texts([{"type": "text", "text": "a"}, {"type": "image"}, {"text": 5}, "x",
                          {"type": "input_text", "text": "b"}]) == ["a", "b"]
    assert message_texts(None) == []


def test_parse_arguments():
    assert parse_arguments('{"file_path": "/a"}') == {"file_path": "/a"}
    assert parse_arguments("not json {") == "not json {"
    assert parse_arguments({"already": "parsed"}) == {"already": "parsed"}
    assert parse_arguments(None) is None


def test_lead_texts_reads_only_the_first_n_units():
    units = [SimpleNamespace(raw={"content": f"m{i}"}) for i in range(8)] + [SimpleNamespace(raw="x")]
    assert lead_texts(units) == [f"m{i}" for i in range(6)]
    assert lead_texts(units, 2) == ["m0", "m1"]
    assert lead_texts([SimpleNamespace(raw=["not", "a", "dict"])]) == []
