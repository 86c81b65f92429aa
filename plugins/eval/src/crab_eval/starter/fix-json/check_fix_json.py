import json
import sys

with open("settings.json") as handle:
    data = json.load(handle)
if data != {"name": "crab", "retries": 3, "hosts": ["a.example", "b.example"]}:
    sys.exit(f"values changed: {data}")
