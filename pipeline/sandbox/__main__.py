"""``python -m pipeline.sandbox (--policy FILE | --policy-fd N) -- argv...``: confine, then exec."""

from __future__ import annotations

import os
import sys

from .entry import main

code = main(sys.argv[1:])
# Skip interpreter teardown: the worker tree is gone and every record is written.
sys.stderr.flush()
os._exit(code)
