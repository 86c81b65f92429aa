import json
import sys

data = json.load(open("settings.json"))
if data != {"name": "crab", "retries": 3, "hosts": ["a.example", "b.example"]}:
    sys.exit(f"values changed: {data}")
