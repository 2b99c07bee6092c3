"""Registers plastic's Toil batch system ("--batchSystem plastic").

Toil imports every top-level module named toil_batch_system_* in every Toil command, so this one
only registers a factory: the real imports happen when Toil asks for the class.
"""

from toil.batchSystems.registry import add_batch_system_factory


def plastic_batch_system_factory():
    from plastic.framework.toil_batch import PlasticBatchSystem

    return PlasticBatchSystem


add_batch_system_factory("plastic", plastic_batch_system_factory)
