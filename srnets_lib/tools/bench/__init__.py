"""Training-step speed, srnets vs a naive reference, measured side by side in one process.

    python -m srnets_lib.tools.bench                                  # CPU: tiny, packaged-2, packaged
    python -m srnets_lib.tools.bench --models bert-base --workloads mask finetune imp eval --sharing 1 2 4   # GPU

Workloads (one optimiser step each, the same examples, model shape and batch size):
  finetune  all weights train (embeddings frozen, as in params/toy.yaml)
  mask      only the mask scores train (algorithm 2); every weight frozen
  imp       weights train under a fixed 50% magnitude mask (algorithm 1 between pruning steps)
  eval      inference over the examples at the evaluation batch size (no optimiser)
  mlm, kd, mlm+kd   task-agnostic mask training (TAMT section 3.4) on unlabelled blocks: the
            pre-training model (encoder, pooler, MLM head), masks at 50%, the objective of
            engine/kinds/corpus.py (KD: against a frozen dense teacher). Never compiled (engine/kinds/corpus.py):
            compiled variants are skipped for them. Their naive reference computes the MLM
            logits at every position, as BertForMaskedLM does.

Lengths: `synthetic` (the toy's synthetic NLI pairs, mean ~14 tokens), `mnli-like` (generated:
log-normal word-piece counts with mean ~40 and a tail to 128, as MNLI pairs under BERT's
tokenizer; no download) or `full` (every example --max-length tokens: WikiText-103's 512-token
blocks, SQuAD's 384-token windows). Default: mnli-like for bert-base, synthetic otherwise.

Variants, each adding one change to the one before it:
  naive     the authors' setting: fp32, every pair padded to --max-length, random batches, eager
            attention, torch's dropout, autograd through every frozen weight
  fp32 pad  srnets_lib's training step (step.py), eager: no gradients for frozen weights, SDPA
  tf32 pad  + precision tf32 (fp32 with TF32 matmuls on CUDA)
  bf16 pad  + precision bf16 (autocast; weights stay fp32)
  ours pad  the training loop's own path: the precision of the params file this machine runs
            (--params; default params/toy.yaml on CPU, fp32: bf16 autocast is emulated and several
            times slower on CPUs without native bf16; params/paper.yaml on CUDA, fp32), with
            dropout_rng fast on CPU (srnets_lib/model/dropout.py)
  ours      + dynamic padding in length-grouped batches: the real lengths
  compiled  + torch.compile of the step (CUDA graphs on GPU), lengths padded to step.BUCKETS
  compiled pad  the compiled step on batches padded to --max-length
  compiled fp32 pad, compiled tf32 pad, compiled fp32, compiled tf32: the compiled step at the
            other precisions (params/paper.yaml runs fp32 padded: its own rate)
Defaults: on CPU naive .. ours (compiling a CPU step took ~48 s and gave no gain); on CUDA
naive, fp32 pad, compiled fp32 pad, compiled tf32 pad, compiled fp32, compiled pad, ours, compiled. `--sharing 1 2 4` also measures the aggregate
mask-training steps/s of N processes sharing the device. `python -m srnets_lib plan` turns the
newest CUDA rows (BERT-base compiled mask steps/s at mnli-like lengths, compiled evaluation
examples/s, sharing speed-ups) into GPU-hours (plan.load_throughput).

Each row says which path ran: a compiled variant whose compiling, CUDA-graph capture or compiled
backward fails is measured eagerly from there, with a warning, and reads "eager (compiling failed:
...)" (the training loop falls back the same way); `plan` takes only rows that ran compiled.

Memory: CUDA peak allocated; on CPU the peak resident-set growth from the first step on,
sampled every 2 ms (unreliable for short steps). Model FLOPs count the real tokens only:
6 * matmul parameters * tokens + attention; MFU compares them with a measured bf16 matmul peak.
"""
