"""What a renderer plugin offers beside the ``crab.Renderer`` protocol: its ``RendererSpec``, the
``RenderTarget`` it writes to, and the live chat input seam (``ChatInput``, ``ChatEntry``,
``ChatState``) that ``crab chat`` reads through (docs/plugins.md)."""

from crab._contracts.renderers import ChatEntry, ChatInput, ChatState, RendererSpec, RenderTarget

__all__ = ["ChatEntry", "ChatInput", "ChatState", "RenderTarget", "RendererSpec"]
