"""A fake plugin that records that it was imported (to prove disabled plugins never are)."""

import os
from pathlib import Path

Path(os.environ["CRAB_FAKE_IMPORT_LOG"]).open("a").write("imported\n")
