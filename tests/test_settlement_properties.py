"""Settlement properties (hypothesis): any sequence of requests and rolls is either applied or
refused with a rule, and money is conserved in the ledger."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from settlement.engine import Rejected
from settlement.ledger import Session
from settlement.profile import load_profile
from settlement.wagers import HOPS, KINDS

PROF = {n: load_profile(n) for n in ("ny-5324", "ny-4620", "nj-13-47", "rules-002")}

bet_req = st.fixed_dictionaries({
    "player": st.sampled_from(["a", "b"]),
    "bet": st.sampled_from(sorted(KINDS)),
    "amount": st.sampled_from([100, 200, 400, 500, 600, 1000, 2500]),
}, optional={
    "number": st.sampled_from([2, 3, 4, 5, 6, 8, 9, 10, 11, 12]),
    "base": st.sampled_from(["pass", "dont_pass", "come", "dont_come"]),
    "dice": st.sampled_from([list(h) for h in HOPS]),
    "working": st.booleans(),
})
event = st.one_of(
    st.tuples(st.just("bet"), bet_req),
    st.tuples(st.just("remove"), bet_req),
    st.tuples(st.just("roll"), st.tuples(st.integers(1, 6), st.integers(1, 6))),
    st.tuples(st.just("roll"), st.tuples(st.integers(1, 6), st.integers(1, 6))),
    st.tuples(st.just("shooter"), st.sampled_from(["voluntary", "compulsory"])),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(PROF)), events=st.lists(event, max_size=60))
def test_requests_are_applied_or_refused_and_money_is_conserved(name, events):
    prof = PROF[name]
    s = Session(prof)
    net: dict[str, int] = {}
    for kind, arg in events:
        try:
            if kind == "bet":
                s.place(dict(arg))
            elif kind == "remove":
                s.remove(dict(arg))
            elif kind == "shooter":
                s.shooter_change(arg)
            else:
                out, _ = s.roll(arg)
                for x in out:
                    placed_vig = x.vig if x.kind in ("buy", "lay") and x.result in ("win", "lose") and (
                        (prof.s.vig.buy_when if x.kind == "buy" else prof.s.vig.lay_when) == "placed") else 0
                    net[x.player] = net.get(x.player, 0) + x.returned - x.stake - placed_vig
                    assert x.stake > 0 and x.payout >= 0 and x.vig >= 0
                    assert (x.payout > 0) <= (x.result == "win")
        except Rejected as exc:
            assert exc.rule and exc.reason
    for p in ("a", "b"):
        open_outlay = sum(w.amount + w.vig_paid for w in s.table.wagers if w.player == p)
        assert s.balance(p) + open_outlay == net.get(p, 0)
    s.close()
