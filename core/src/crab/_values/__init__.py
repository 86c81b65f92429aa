"""Work on the contracts' values that is no contract itself: a ``Tool`` and its JSON schema from a
typed function, checking arguments against a schema, cutting output to a budget. Imports only
``crab._contracts`` (core/tests/test_import_graph.py). Private; crab re-exports the public names."""
