"""``/model``'s resolution (``crab._values.model_choice.resolve``): the run's own model and the
session's are taken by the names ``/model`` lists for them, even when the provider object the run
holds is not the registry's (an endpoint's provider built twice) and lists no models."""

from __future__ import annotations

from crab._values.model_choice import choice_of, resolve
from crab.testing import ScriptedProvider


def unlisted(name: str) -> ScriptedProvider:
    provider = ScriptedProvider([[{"text": "hi"}]], name=name)
    provider.models = lambda: []  # type: ignore[method-assign]  # a local server lists nothing
    return provider


def test_the_runs_own_model_is_taken_by_its_listed_name_from_another_object_of_its_provider() -> None:
    run_provider, registry_provider = unlisted("local"), unlisted("local")
    default = choice_of(run_provider, "gpt-4.1")
    other = choice_of(unlisted("other"), "m")
    providers = {"local": registry_provider, "other": other.provider}
    assert resolve("local/gpt-4.1", providers, other, default) is default
    assert resolve("gpt-4.1", {"local": registry_provider}, default, default) is default


def test_the_sessions_model_is_taken_by_provider_name_and_model() -> None:
    current = choice_of(unlisted("local"), "small")
    default = choice_of(unlisted("other"), "m")
    registry = {"local": unlisted("local"), "other": default.provider}
    assert resolve("local/small", registry, current, default) is current
