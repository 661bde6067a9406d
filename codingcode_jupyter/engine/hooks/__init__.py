"""Hooks: commands and Python callables the person configures to run at events of a session.

One package for every event (:class:`~.events.HookEvent`, with :data:`~.events.EVENT_RULES`
saying how each event reads its hooks): :mod:`.runner` runs one hook and reads its answer in
its file's dialect, :mod:`.payloads` says what each dialect is told, :mod:`.fire` is the one
place hooks are fired, into the event's combiner: :mod:`.pre_tool_use`'s for PreToolUse (the
approval pipeline's ``hooks`` layer; it also tells the approval observers), :mod:`.lifecycle`'s
``EventOutcome`` for every other event (``LifecycleHooks.run``).
Nothing is imported here: the submodules load when a session first needs them.
"""
