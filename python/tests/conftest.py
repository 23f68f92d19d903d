"""The tests import monogen from the build tree (ctest sets PYTHONPATH=<build>/python) and the
helpers next to them (pipe_group, ffn_rank); they need Debian's python3-torch (CMake registers
them only when torch imports)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
