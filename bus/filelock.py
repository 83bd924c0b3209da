"""One process owns a file: an exclusive, non-blocking ``flock`` on ``<file>.lock``.

Used by the roll bus journal (bus/publisher.py), the controller's state store
(controller/store.py) and the settlement ledger (settlement/ledger.py): two writers of one of
those files would each append from their own state (sequence numbers reused, rolls or wagers
applied twice). The lock is released when the returned file is closed, or when the process
ends, however it ends.
"""
from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO


class LockHeld(Exception):
    """Another open file description (another process, or another owner in this one) holds the
    lock; ``.path`` is the lock file."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"lock {path} held")
        self.path = path


def take_exclusive(lock_path: Path) -> IO[str]:
    """Open ``lock_path`` (created if missing; its directory must exist) and take an exclusive
    ``flock`` on it without waiting. Returns the open file: close it to release the lock.

    Raises:
        LockHeld: the lock is held by another owner.
        OSError: the lock file cannot be opened (a missing directory, no permission).
    """
    f = open(lock_path, "a")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        raise LockHeld(Path(lock_path)) from None
    return f
