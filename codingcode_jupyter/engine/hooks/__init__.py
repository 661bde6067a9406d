"""Hooks: commands and Python callables the person configures to run at events of a session.

One package for every event (:class:`~.events.HookEvent`): :mod:`.runner` runs one hook and
reads its answer in its file's dialect, :mod:`.payloads` says what each dialect is told,
:mod:`.pre_tool_use` fires PreToolUse (the approval pipeline's ``hooks`` layer) and the
approval observers, :mod:`.lifecycle` fires every other event (``LifecycleHooks.run``).
Nothing is imported here: the submodules load when a session first needs them.
"""
