"""``Delivery``: the one place events are delivered: secrets masked and text made valid UTF-8
(``crab._secrets.redaction``), then every listener (renderers, a session's own) and every
``crab_event`` observer."""

from __future__ import annotations

from collections.abc import Callable

from crab._contracts.events import Event, NoticeEvent
from crab._host.dispatch import Dispatcher
from crab._secrets.redaction import EventRedactor

Listener = Callable[[Event], None]


class Delivery:
    """Listeners of one agent's events; a listener that raises is detached (a broken renderer
    must not end the turn) and a notice says so."""

    def __init__(self, dispatch: Dispatcher, outgoing: EventRedactor) -> None:
        self.dispatch = dispatch
        self.outgoing = outgoing
        self._listeners: list[Listener] = []
        self._session_listeners: dict[str, list[Listener]] = {}

    def subscribe(self, listener: Listener, session_id: str | None = None) -> Callable[[], None]:
        """Receive every event (or only those of ``session_id``); returns a function that unsubscribes."""
        listeners = self._listeners if session_id is None else self._session_listeners.setdefault(session_id, [])
        listeners.append(listener)

        def unsubscribe() -> None:
            if listener in listeners:
                listeners.remove(listener)
            if session_id is not None and not listeners:
                self._session_listeners.pop(session_id, None)

        return unsubscribe

    def emit(self, event: Event, session_id: str = "") -> None:
        """Deliver ``event`` (of ``session_id``; "" for the whole agent's), masked."""
        for shown in self.outgoing.events(event, session_id):
            self._deliver(shown, session_id)

    def notice(self, message: str, level: str = "info") -> None:
        self.emit(NoticeEvent(message, "warning" if level == "warning" else "info"))

    def _deliver(self, event: Event, session_id: str) -> None:
        scoped = self._session_listeners.get(session_id, []) if session_id else []
        for listeners in (self._listeners, scoped):
            for listener in list(listeners):
                try:
                    listener(event)
                except Exception as exc:
                    if listener in listeners:
                        listeners.remove(listener)
                    self.notice(f"a renderer failed and was detached: {type(exc).__name__}: {exc}", "warning")
        self.dispatch.observe("crab_event", event=event, session_id=session_id)
