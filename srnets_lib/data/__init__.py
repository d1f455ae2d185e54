"""Task data: the task registry with published sizes (tasks.py), the loaders of each family (the
embedded default's synthetic tasks, the paper's original files and hub datasets, TAMT's GLUE tasks,
SQuAD and corpus), tokenisation and batching, the bias model's predictions, and every input a run
reads named before it starts (inputs.py). load.py reads a task's splits as its DataConfig says."""
