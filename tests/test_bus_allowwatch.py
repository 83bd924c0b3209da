"""bus/allowwatch.py: the allow-list folder watch shared by the roll bus, the boxperson command
socket and the wager intake (no sockets here: the sockets' tests are test_bus_allowlist_watch.py,
test_irregularity_boxperson.py and test_settlement_terminals.py)."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bus.allowwatch import AllowListWatch, load_allow_list
from bus.keys import BusKeyError, authorize, generate_keys, load_curve_public


@pytest.fixture()
def folder(tmp_path: Path):
    keys = {n: generate_keys(tmp_path / "k", n) for n in ("a", "b", "c")}
    allow = tmp_path / "allow"
    for n in ("a", "b"):
        authorize(keys[n].curve_public, allow)
    return allow, {n: load_curve_public(k.curve_public).decode("ascii") for n, k in keys.items()}, keys


def test_a_change_is_read_at_the_next_look_and_not_before(folder):
    allow, key, keys = folder
    w = AllowListWatch(allow, "test", logging.getLogger("test"), reload_every_s=1.0)
    assert sorted(w.table.by_key) == sorted([key["a"], key["b"]])
    t0 = w._next_look
    (allow / "a.key").unlink()
    authorize(keys["c"].curve_public, allow)
    assert w.refresh(t0 - 0.01) is None and w.allows(key["a"])      # not yet looked
    done = w.refresh(t0)
    assert (done.ok, done.removed, done.added) == (True, frozenset([key["a"]]), frozenset([key["c"]]))
    assert not w.allows(key["a"]) and w.allows(key["c"]) and w.allows(key["b"])
    assert w.refresh(t0 + 5) is None                                 # unchanged
    assert w.callback("*", key["c"].encode()) and not w.callback("*", key["a"].encode())
    assert not w.callback("*", b"\xff" * 40)
    assert w.refusal(key["a"], "nothing done") == (
        f"test: a (key {key['a'][:8]}...) is not in the allow-list {allow} (its certificate was removed): nothing done")
    assert w.refusal(key["b"], "nothing done") is None


def test_a_folder_that_cannot_be_read_keeps_the_list_less_the_removed(folder, caplog):
    allow, key, _ = folder
    w = AllowListWatch(allow, "test", logging.getLogger("test"), noun="consoles", reload_every_s=0.0)
    (allow / "bad.key").write_text("not a certificate\n")
    (allow / "b.key").unlink()
    done = w.refresh()
    assert (done.ok, done.removed, done.added) == (False, frozenset([key["b"]]), frozenset())
    assert isinstance(w.last_error, BusKeyError) and "bad.key" in str(w.last_error)
    assert sorted(w.table.by_key) == [key["a"]]
    [rec] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert rec.getMessage().startswith(f"test: allow-list {allow} not reloaded: ") and str(allow / "bad.key") in \
        rec.getMessage() and rec.getMessage().endswith("kept, less the consoles whose certificate was removed: b")
    # the folder gone: nothing is allowed whose certificate is gone (all of them)
    (allow / "bad.key").unlink()
    (allow / "a.key").unlink()
    allow.rmdir()
    assert w.refresh().removed == frozenset([key["a"]]) and w.table.by_key == {}


def test_a_bad_folder_at_start_is_an_error_naming_it(tmp_path: Path):
    with pytest.raises(BusKeyError, match="does not exist"):
        AllowListWatch(tmp_path / "none", "test", logging.getLogger("test"))
    (tmp_path / "allow").mkdir()
    (tmp_path / "allow" / "x.key").write_text("nope\n")
    with pytest.raises(BusKeyError, match="x.key"):
        load_allow_list(tmp_path / "allow")


def test_pruning_keeps_what_a_subscriber_with_an_unreadable_certificate_has_not_acknowledged(tmp_path):
    """The journal is pruned up to what every subscriber of the allow-list in effect acked. A
    certificate that became unreadable keeps its key in effect (the watch never widens nor
    narrows access on a folder it cannot read, but for removed files), so its subscriber's
    unacknowledged messages stay. Before, pruning read the folder itself and skipped the
    unreadable certificate: the table deleted seq 3..5 that subscriber still needed."""
    from bus.config import BusConfig
    from bus.journal import AckStore, Journal, acks_path
    from bus.keys import authorize, generate_keys
    from bus.publisher import RollPublisher

    cfg = BusConfig.local(tmp_path / "b", transport="tcp")          # prune_acked off: pruned by hand here
    audit = generate_keys(cfg.keys_dir, "audit")
    authorize(audit.curve_public, cfg.allow_dir)
    with RollPublisher(cfg) as pub:
        for i in range(6):
            pub.publish("roll", {"n": i})
        keys = sorted(pub.allow.table.by_key)
        assert len(keys) == 2
        audit_key = next(k for k, c in pub.allow.table.by_key.items() if c.name == "audit")
        other_key = next(k for k in keys if k != audit_key)
        (cfg.allow_dir / "audit.key").write_text("not a certificate any more\n")
        journal = Journal(cfg.journal_path)
        store = AckStore(acks_path(cfg.journal_path), journal.journal_id)
        try:
            store.record(other_key, 5, "2026-12-04T00:00:00+00:00")
            store.record(audit_key, 2, "2026-12-04T00:00:00+00:00")
            pub._prune(journal, store)
            assert journal.first_seq() == 3 and journal.last_seq == 6
        finally:
            store.close()
            journal.close()
