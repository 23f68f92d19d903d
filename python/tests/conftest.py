"""The tests import monogen from the build tree (ctest sets PYTHONPATH=<build>/python) and need
Debian's python3-torch; without torch they are skipped, saying so."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # pipe_group, ffn_rank
torch = pytest.importorskip("torch", reason="needs torch (Debian: python3-torch)")
