"""Taking a subnetwork out of the run store: `python -m srnets_lib export` writes a run (or a
page's points) as standard Hugging Face model folders that transformers loads without srnets,
with the bit-packed mask, the run's config.yaml and a model card.

  targets.py  what to export: a run key, or a page's points (section, series, task, sparsity, seed)
  rebuild.py  the run's model from the store (computed again where its weights were not kept)
  hf.py       the folder: W * m in model.safetensors, config.json, tokenizer, mask.npz, config.yaml
  check.py    the folder loaded back by transformers against the run's outputs and predictions
  measure.py  size on disk, CPU latency and peak memory beside the dense model (measure_worker.py)
  card.py     README.md: the Hub's metadata, the paper section, settings, scores, sparsity, measurements
  cli.py      the command
modeling_mean_pooled.py is copied into folders of runs with `pooling: mean` (transformers only).
"""
