"""What a run's steps are made of, below the settings and the store that name them: the device
and precision (runtime), the losses (section 3.3, appendix A.2), one optimisation step, checkpoint
selection, and the task kinds (kinds/: the batches, objective and evaluator of each kind of task)."""
