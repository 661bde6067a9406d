"""The trust boundary: what a project's own files may loosen only once the person trusted them.

``items`` lists what a project asks for, ``boundary`` takes out what is not trusted, ``store``
keeps the person's decisions (per project, per content), ``decisions`` writes them to the
audit log.
"""

from .boundary import Screened, screen_settings
from .decisions import record_trust
from .items import TrustItem, settings_items
from .store import ENV_VAR, TrustStore, trusted_by_environment

__all__ = ["ENV_VAR", "Screened", "TrustItem", "TrustStore", "record_trust", "screen_settings", "settings_items",
           "trusted_by_environment"]
