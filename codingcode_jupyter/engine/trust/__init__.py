"""The trust boundary: what a project's own files may loosen only once the person trusted them.

``items`` lists what a project asks for, ``boundary`` takes out what is not trusted, ``store``
keeps the person's decisions (per project, per content), ``decisions`` writes them to the
audit log.
"""
