"""The cost benchmark's parts (``bench/cost.py`` runs them): the fake providers' billing, their
HTTP endpoints, the scripted sessions and the project they work on.

Loaded by path as the package ``_cost``: bench/ itself stays off ``sys.path``, where its
``http.py`` would shadow the standard library's ``http``.
"""
