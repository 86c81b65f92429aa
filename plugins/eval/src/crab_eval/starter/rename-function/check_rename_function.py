"""Passes when no file names fetch_data and the program still runs."""

import importlib
import pathlib
import subprocess
import sys

left = [p.name for p in pathlib.Path(".").glob("*.py") if "fetch_data" in p.read_text()]
if left:
    sys.exit(f"fetch_data is still named in {left}")
out = subprocess.run([sys.executable, "main.py"], capture_output=True, text=True, timeout=30)
if out.stdout.strip() != "[1, 2, 3]":
    sys.exit(f"main.py printed {out.stdout!r} {out.stderr[-200:]!r}")
sys.path.insert(0, ".")
report = importlib.import_module("report")
if report.total() != 6:
    sys.exit("report.total() is wrong")
