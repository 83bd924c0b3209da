"""``bench/irregularity_bench.py`` loaded as the module ``irregularity_bench`` (once), for the
tests that judge rendered throws as the bench does."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def irregularity_bench() -> ModuleType:
    """The bench module (registered in ``sys.modules``: its dataclasses look the module up)."""
    mod = sys.modules.get("irregularity_bench")
    if mod is None:
        spec = importlib.util.spec_from_file_location(
            "irregularity_bench", Path(__file__).resolve().parents[1] / "bench" / "irregularity_bench.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["irregularity_bench"] = mod
        spec.loader.exec_module(mod)
    return mod
