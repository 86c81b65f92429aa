import importlib
import sys

sys.path.insert(0, ".")
last_n = importlib.import_module("window").last_n

cases = [(([1, 2, 3, 4], 2), [3, 4]), (([1, 2], 5), [1, 2]), (([1, 2, 3], 0), []), (([7], 1), [7])]
for (items, n), want in cases:
    got = last_n(items, n)
    if got != want:
        sys.exit(f"last_n({items}, {n}) is {got}, expected {want}")
