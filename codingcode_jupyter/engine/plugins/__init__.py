"""Claude Code's plugins, read as Claude Code reads them.

``sources`` says where a marketplace or a plugin comes from (a directory, a git repository, a
GitHub repository) and fetches git ones into the person's cache; ``marketplace`` reads a
``.claude-plugin/marketplace.json``; ``manifest`` reads one plugin (its ``plugin.json`` and the
commands, agents, skills, hooks and MCP servers it brings); ``catalog`` resolves
``extraKnownMarketplaces`` and ``enabledPlugins`` of every settings file into the plugins of a
project. Nothing here runs what a plugin brings: the settings, the trust boundary and the parts
of a session do, each for its own kind of component.
"""
