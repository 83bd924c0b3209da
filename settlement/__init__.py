"""Settlement: wagers, pay tables, ledger.

Pure core (plain values, no I/O): :mod:`settlement.wagers` (wager types as data),
:mod:`settlement.rules` (the decision of a wager on a roll), :mod:`settlement.game`
(come-out / point / shooter from the rolls), :mod:`settlement.engine` (``settle`` and the
legality rules), :mod:`settlement.money` (cents, "to"/"for" odds, rounding).
Rules as data: :mod:`settlement.profile` loads ``config/profiles/<name>.toml`` ``[settlement]``.
Edges: :mod:`settlement.ledger` (SQLite), :mod:`settlement.cli` (``craps-table settle``),
:mod:`settlement.service` (``craps-table settle-service``, roll-bus subscriber),
:mod:`settlement.intake` (its player terminals' wager socket), :mod:`settlement.wager_cli`
(``craps-table wager``, a test terminal).
Verification: :mod:`settlement.house_edge` (exact edges), :mod:`settlement.crosscheck`
(against crapssim), :mod:`settlement.fast` (vectorised settlement for throughput).
Never imports ``controller``.
"""
