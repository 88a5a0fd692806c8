from scalpel_desktop.decisions import CHANGES, changes_of, is_change, label
from scalpel_desktop.exchange import Decision


def test_labels_name_every_change_in_one_order():
    assert label(set()) == "unchanged"
    assert label({"filtered", "cut"}) == "cut+filtered"
    assert label(set(CHANGES)) == "cut+replayed+filtered"
    assert changes_of("replayed+filtered") == {"replayed", "filtered"}
    assert not is_change("unchanged") and not is_change("paused") and not is_change("error") and not is_change(None)
    assert is_change("replayed")


def test_stages_add_changes_and_none_overwrites_another():
    d = Decision()
    d.add("filtered", "tool filter: 2 declaration(s) not sent", 300)
    d.add("replayed", "replayed 2 earlier cuts", 0)
    d.note("nothing dead")
    d.tokens_removed += 1000
    assert d.label == "replayed+filtered" and d.tokens_removed == 1300
    assert d.reason == "tool filter: 2 declaration(s) not sent; replayed 2 earlier cuts; nothing dead"
    assert Decision("paused").label == "paused"
