import subprocess
import sys


def run(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "greet.py", *args], capture_output=True, text=True, timeout=30
    ).stdout.strip()


if run("--name", "bo", "--shout") != "HELLO, BO!":
    sys.exit("--shout does not shout")
if run("--name", "bo") != "Hello, bo!":
    sys.exit("without --shout the greeting changed")
