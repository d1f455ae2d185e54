"""Settings groups, as open_lth's hparams: the machinery (base.py: Group, Plugin, Settings and the
one rule refusing another plugin's settings) and the groups every run has (common.py). A plugin's
own groups are declared in its module (methods/, engine/kinds/); settings/config.py composes
them all into RunConfig."""

from srnets_lib.hparams.base import Group, Plugin, Settings, fields, foreign, unread
from srnets_lib.hparams.common import (BiasModelSettings, DataConfig, ModelSettings, OptimisationSettings,
                                       PruningSettings, SelectionSettings)

__all__ = ["BiasModelSettings", "DataConfig", "Group", "ModelSettings", "OptimisationSettings", "Plugin",
           "PruningSettings", "SelectionSettings", "Settings", "fields", "foreign", "unread"]
