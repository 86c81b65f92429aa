import importlib
import sys

sys.path.insert(0, ".")
is_palindrome = importlib.import_module("text").is_palindrome

for s, want in [("A man, a plan, a canal: Panama", True), ("crab", False), ("", True), ("No lemon, no melon", True)]:
    if is_palindrome(s) is not want:
        sys.exit(f"is_palindrome({s!r}) should be {want}")
