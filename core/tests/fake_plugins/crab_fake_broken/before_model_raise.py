"""A ``crab_before_model_call`` hook that raises: the model call must not be made."""

import crab


@crab.hookimpl
async def crab_before_model_call(request, session_id):
    raise RuntimeError("request checker bug")
