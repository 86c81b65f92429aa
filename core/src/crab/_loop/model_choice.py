"""Which provider and model each live session talks to: the run's, or the one ``/model`` chose for
it (recorded as an ``event`` entry, so a resume restores it); resolving a name is ``crab._values.model_choice``'s."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from crab._contracts.errors import CrabError
from crab._contracts.providers import Provider
from crab._contracts.storage import EntryType
from crab._values.model_choice import ModelChoice, choice_of, configured_models, model_entry, resolve

if TYPE_CHECKING:
    from crab._loop.session import Session


class Models:
    """The provider and model each session of one agent talks to: the run's (``provider``,
    ``model``) until ``/model`` switches a session (``set``, recorded by ``append``)."""

    def __init__(
        self,
        provider: Provider,
        model: str,
        providers: Callable[[], Mapping[str, Provider]],
        append: Callable[[Session, EntryType, Mapping[str, Any]], Awaitable[None]],
        notice: Callable[[str, str], None],
    ) -> None:
        self.provider = provider
        self.model = model
        self.providers = providers
        self.append = append
        self.notice = notice
        self._default: ModelChoice | None = None

    def default(self) -> ModelChoice:
        """The run's provider and model (what a session talks to until ``/model`` switches it)."""
        if self._default is None:
            self._default = choice_of(self.provider, self.model)
        return self._default

    def model_for(self, session: Session | None = None) -> ModelChoice:
        """The provider and model ``session`` talks to (without one: the run's)."""
        if session is not None and session.model is not None:
            return session.model
        return self.default()

    def configured(self, session: Session | None = None) -> list[str]:
        """Every ``provider/model`` ``/model`` may switch to: the run's, the session's, then what
        each loaded provider lists."""
        return configured_models(self.providers(), self.default(), self.model_for(session))

    async def set(self, session: Session, spec: str) -> ModelChoice:
        """Switch ``session`` to ``spec`` (``provider/model``, or a model of its provider) for its
        next request on, recorded in the store so a resume restores it; the token budget follows
        the new model's window and each call is priced at its prices. ``ConfigError`` (one line
        saying what to do) for a provider or model that is not configured."""
        choice = resolve(spec, self.providers(), self.model_for(session), self.default())
        await self.append(session, "event", model_entry(choice))
        session.model = choice
        session.budget = None  # made again at the next request, against the new window
        return choice

    def restore(self, session: Session, stored: tuple[str, str] | None) -> None:
        """Give a resumed session the model its last recorded switch chose, when that is still loaded."""
        if stored is None:
            return
        name, model = stored
        default = self.default()
        if (name, model) == (default.provider.name, default.model):
            return
        provider = self.providers().get(name)
        why = f"provider {name} is not loaded" if provider is None else ""
        if provider is not None:
            try:
                provider.check(model)
            except CrabError as exc:
                why = str(exc)
        if why:
            self.notice(
                f"session {session.id} was switched to {name}/{model}, but {why}: using {default.name}", "warning"
            )
            return
        assert provider is not None
        session.model = choice_of(provider, model)
