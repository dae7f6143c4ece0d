"""Python agents (`[capture] callable = "module:function"`) imported from beside the config, as a command finds its script."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path
from types import ModuleType

_IMPORTING = threading.Lock()


def import_beside(module: str, home: Path | None) -> ModuleType:
    """`module`, looked for in `home` first, so `my_agent.py` beside the config needs no PYTHONPATH. `home` is
    on the import path only while the module loads (with the imports it makes then), not for unrelated imports."""
    if home is None or module in sys.modules:
        return importlib.import_module(module)
    with _IMPORTING:  # runs import concurrently: each must restore the path the others see
        sys.path.insert(0, str(home))
        try:
            return importlib.import_module(module)
        finally:
            sys.path.remove(str(home))
