"""Settings groups (srnets_lib/hparams/): a method or task kind declares the settings only it reads
in its own module; RunConfig composes them into flat fields, so adding a method with one setting
touches its module (and its registry line) and no other run's key."""

import pickle

import pytest
from pydantic import Field, ValidationError

from srnets_lib import hparams, methods
from srnets_lib.engine import kinds
from srnets_lib.hparams import Group
from srnets_lib.methods import Finetune, Method
from srnets_lib.methods.imp import IMP, IMPSettings
from srnets_lib.methods.oneshot import OMP, RoundingSettings
from srnets_lib.settings import config
from srnets_lib.settings.config import RunConfig


class SnipSettings(Group):
    """A new method's one setting, declared beside it (docs/ARCHITECTURE.md's `snip`)."""

    snip_batches: int = Field(1, gt=0)


class Snip(Method):
    prunes = True
    groups = (SnipSettings,)


def test_each_plugins_settings_are_declared_in_its_own_module():
    declared = {g: g.__module__ for plugin in (*methods.METHODS.values(), *kinds.KINDS.values()) for g in plugin.groups}
    assert declared[IMPSettings] == "srnets_lib.methods.imp" and declared[RoundingSettings] == "srnets_lib.methods.oneshot"
    assert all(m.startswith(("srnets_lib.methods.", "srnets_lib.engine.kinds.")) for m in declared.values())
    owned = {name for g in declared for name in g.model_fields}
    assert owned <= set(RunConfig.model_fields) and not owned & set(config.CommonSettings.model_fields)
    assert set(RunConfig.model_fields) == set(config.CommonSettings.model_fields) | owned


def test_a_new_methods_setting_comes_from_its_module_alone():
    composed = config.compose(methods.groups() + kinds.groups() + [SnipSettings])
    assert composed.model_fields["snip_batches"].default == 1
    with pytest.raises(ValidationError, match="snip_batches"):
        composed(task="nli", snip_batches=0)
    # a run that leaves the new setting at its default keeps its key
    for kwargs in ({"task": "nli"}, {"task": "nli", "method": "imp", "sparsity": 0.2, "imp_rewind": True}):
        assert composed(**kwargs).key() == RunConfig(**kwargs).key()
    # and another method's run may not set it: the one rule (hparams.foreign), as Method.check applies it
    with pytest.raises(ValidationError, match="snip_batches=4 is method Snip's setting: method=finetune does not"):
        composed(task="nli", snip_batches=4)
    run = composed.model_construct(task="nli", snip_batches=4)
    assert hparams.foreign(Finetune, {Finetune, Snip}, run) == ("snip_batches", 4, Snip)
    assert hparams.foreign(Snip, {Finetune, Snip}, run) is None


def test_a_shared_group_is_read_by_each_plugin_that_names_it():
    omp = RunConfig(task="nli", method="omp", sparsity=0.5, prune_rounding="torch")
    imp = RunConfig(task="nli", method="imp", sparsity=0.2, prune_rounding="torch")
    assert hparams.foreign(OMP, methods.METHODS.values(), omp) is None
    assert hparams.foreign(IMP, methods.METHODS.values(), imp) is None
    with pytest.raises(ValidationError, match="prune_rounding=torch is method IMP's setting: method=mask"):
        RunConfig(task="nli", method="mask", sparsity=0.5, prune_rounding="torch")


def test_a_setting_two_groups_declare_is_refused():
    class Again(Group):
        imp_rewind: bool = False

    with pytest.raises(ValueError, match="imp_rewind is declared by IMPSettings and Again"):
        hparams.fields([IMPSettings, Again])


def test_a_hook_reads_the_common_settings_and_its_own_groups_never_the_whole_run_config():
    config = RunConfig(task="nli", method="mask", sparsity=0.5)
    method = methods.create(config, train_rows=64)
    assert isinstance(method.config, hparams.Settings) and not isinstance(method.config, RunConfig)
    assert method.config.sparsity == 0.5 and method.config.hard_init_ties == "exact"  # common; its own group's
    assert method.config.key() == config.key()  # what the run derives from its settings
    with pytest.raises(AttributeError, match="method MaskTraining does not read imp_rewind"):
        method.config.imp_rewind  # IMP's
    with pytest.raises(AttributeError, match="read-only"):
        method.config.sparsity = 0.7
    rewound = methods.create(RunConfig(task="nli", method="imp-rw", sparsity=0.2), train_rows=64)
    assert rewound.config.prune_rounding == "floor" and rewound.config.imp_rewind is False  # IMP's groups, inherited
    kind = kinds.of("nli")
    with pytest.raises(AttributeError, match="kind does not read kd_data"):
        kind.settings(config).kd_data  # the corpus kind's
    assert pickle.loads(pickle.dumps(method.config)).hard_init_ties == "exact"
