"""The table service on the simulated table, frames in, verdicts out: dice offered to a new
shooter (9 NYCRR 5324.52(i)(3), (i)(4); simulator/offer.py) give no verdict and no boxperson
call, and the throw after them its roll; dice that struck the far wall with the pair (a foreign
die, (k)(2)(v)) are extra dice, the boxperson's, however many."""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import load_config
from controller.lamps import NullLampDriver
from controller.service_cli import build_service

from list_publisher import ListPublisher  # noqa: E402

pytest.importorskip("mujoco")
SimSource = pytest.importorskip("simulator.source").SimSource

REPO = Path(__file__).resolve().parents[1]




def run_table(tmp_path, source):
    """The shipped config's service (real reader, observer, tracker) over ``source``; returns
    ``(service stats, messages, the observer's boxperson calls, frames' truth at each roll)``."""
    base = load_config(REPO / "config" / "table.toml")
    cfg = base.model_copy(update={
        "metrics": None,
        "state": base.state.model_copy(update={"db": tmp_path / "state.sqlite"}),
        "boxperson": base.boxperson.model_copy(update={"endpoint": ""}),
    })
    pub = ListPublisher()
    service, _ = build_service(cfg, source, publisher=pub, lamp_driver=NullLampDriver())
    truths = {}
    try:
        service.start()
        for frame in source.frames():
            body = service.process(frame)
            if body is not None:
                truths[body["roll_id"]] = frame.truth
        calls = [] if service.observe.registry is None else list(service.observe.registry.pending())
    finally:
        service.close()
        source.close()
    return service.stats, pub.sent, calls, truths


def test_offer_then_throw_on_the_simulated_table(tmp_path):
    source = SimSource("natural", seed=2, width=960, height=540, fps=60, throws=1, idle_s=0.4, rest_s=0.6,
                       offers=(0,))
    stats, sent, calls, truths = run_table(tmp_path, source)
    rolls = [b for t, b in sent if t == "roll"]
    assert stats.offers == 1
    assert [(b["verdict"], b["reason"]) for b in rolls] == [("roll", None)]     # the throw only
    truth = truths[rolls[0]["roll_id"]]
    assert truth["phase"] == "rest" and sorted(rolls[0]["dice"]) == sorted(d["value"] for d in truth["dice"])
    assert rolls[0]["game"]["shooter_roll"] == 1 and calls == []
    assert [b["event"] for t, b in sent if t == "state"] == ["start"]
    assert not [b for t, b in sent if t == "alarm"]


@pytest.mark.parametrize("foreign", [1, 3])
def test_dice_that_struck_the_far_wall_with_the_pair_are_extra_dice(tmp_path, foreign):
    """A new shooter's first throw (an offer could come now) with 1 or 3 foreign dice thrown
    along: 3 or 5 dice at rest on the layout, all of which struck the far wall: extra-dice, the
    boxperson's call, not an offer."""
    source = SimSource("natural", seed=2, width=960, height=540, fps=60, throws=1, idle_s=0.4, rest_s=0.6,
                       foreign={0: foreign})
    stats, sent, calls, truths = run_table(tmp_path, source)
    rolls = [b for t, b in sent if t == "roll"]
    assert [(b["verdict"], b["reason"]) for b in rolls] == [("boxperson", "extra-dice")]
    assert len([r for r in rolls[0]["readings"] if r["zone"] == "playing"]) == 2 + foreign
    assert stats.offers == 0 and [c.roll_id for c in calls] == [rolls[0]["roll_id"]]
