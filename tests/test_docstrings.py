"""Every public function, class and method of the runtime and training packages has a docstring.

The project's rule (README, "Public functions/classes have docstrings with units, errors raised
and the source"). The packages are read with ``ast`` and never imported, so this runs where
torch, MuJoCo or a camera are absent (``vision/train`` is checked too).

Checked: top-level functions and classes of every module, the methods of those classes
(properties, classmethods and staticmethods included) and of classes nested in them. Names
starting with ``_`` are private (``__init__`` included: a class docstring covers it); functions
nested inside functions are not checked. Definitions under a module- or class-level ``if`` /
``try`` count as that level's.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "bus", "settlement", "firmware_bridge", "vision", "camera", "simulator")


def _statements(body: list[ast.stmt]):
    """The statements of ``body``, with those of its ``if`` / ``try`` blocks in line."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _statements(node.body)
            yield from _statements(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            yield from _statements(node.body)
            for handler in node.handlers:
                yield from _statements(handler.body)
            yield from _statements(node.orelse)
            yield from _statements(node.finalbody)
        else:
            yield node


def _undocumented(body: list[ast.stmt], where: str, prefix: str = ""):
    """``"path:line qualified.name"`` of each public def / class in ``body`` without a docstring."""
    for node in _statements(body):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if node.name.startswith("_"):
            continue
        if ast.get_docstring(node) is None:
            yield f"{where}:{node.lineno} {prefix}{node.name}"
        if isinstance(node, ast.ClassDef):
            yield from _undocumented(node.body, where, f"{prefix}{node.name}.")


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_the_packages_are_found():
    paths = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert len(paths) > 100
    for expected in ("firmware_bridge/protocol.py", "settlement/engine.py",
                     "vision/train/models.py", "controller/cli.py"):
        assert expected in paths


def test_every_public_def_has_a_docstring():
    missing = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        missing.extend(_undocumented(tree.body, path.relative_to(ROOT).as_posix()))
    assert missing == [], f"{len(missing)} public definitions without a docstring:\n" + "\n".join(missing)


def test_the_walk_finds_what_it_should():
    source = '''
def public(): pass
def _private(): pass
class Documented:
    """Doc."""
    def __init__(self): pass
    def method(self):
        def nested(): pass
    @property
    def prop(self): return 1
    @classmethod
    def parse(cls): pass
    class Inner:
        def deep(self): pass
if True:
    def conditional(): pass
try:
    class Tried: pass
except ImportError:
    pass
async def coroutine():
    """Doc."""
'''
    found = list(_undocumented(ast.parse(source).body, "m.py"))
    assert found == [
        "m.py:2 public",
        "m.py:7 Documented.method",
        "m.py:10 Documented.prop",
        "m.py:12 Documented.parse",
        "m.py:13 Documented.Inner",
        "m.py:14 Documented.Inner.deep",
        "m.py:16 conditional",
        "m.py:18 Tried",
    ]
