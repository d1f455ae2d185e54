"""Hand-crafted bias features and the bias model (section 4.1.3, appendix B.3.1).

- nli, paraphrase: five word-overlap features of (premise, hypothesis): all hypothesis
  words in the premise; hypothesis a contiguous subsequence of the premise; fraction of
  hypothesis words in the premise; mean and min over hypothesis words of the max cosine
  similarity to a premise word.
- factcheck: max-pooled word vectors of the claim (claim only).
Word vectors: fastText in the paper; offline we default to the backbone's input embeddings
(a word's vector = mean of its word-piece embeddings). `word_vectors` may name a fastText
.vec file instead. The source used is recorded with the predictions.

The bias model is a linear (logistic-regression) classifier. Its training-set
probabilities are out-of-fold (5 folds), so they are not overfit; dev and OOD
probabilities come from a model fit on the whole training set. Cached per data and vectors.
"""

from __future__ import annotations

import hashlib
import pickle
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from srnets_lib import paths
from srnets_lib.data.encode import split_fingerprint
from srnets_lib.data.local import DataFileError, data_folder
from srnets_lib.data.splits import Split, TaskData
from srnets_lib.metrics import split_metric

# the losses that read the bias model's training-set predictions (section 3.3, appendix A.2)
NEEDS_BIAS = {"poe", "reweight", "confreg"}
WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _is_contiguous(hyp: list[str], prem: list[str]) -> bool:
    n = len(hyp)
    return n > 0 and any(prem[i:i + n] == hyp for i in range(len(prem) - n + 1))


def overlap_features(premise: str, hypothesis: str, vectors: dict[str, np.ndarray]) -> np.ndarray:
    prem, hyp = words(premise), words(hypothesis)
    if not hyp:
        return np.zeros(5)
    prem_set = set(prem)
    inside = [w in prem_set for w in hyp]
    sims = []
    prem_vecs = [vectors[w] for w in prem if w in vectors]
    if prem_vecs:
        prem_matrix = np.stack(prem_vecs)
        for w in hyp:
            if w in vectors:
                sims.append(float(np.max(prem_matrix @ vectors[w])))
    return np.array([float(all(inside)), float(_is_contiguous(hyp, prem)), float(np.mean(inside)),
                     float(np.mean(sims)) if sims else 0.0, float(np.min(sims)) if sims else 0.0])


def claim_features(claim: str, vectors: dict[str, np.ndarray], dim: int) -> np.ndarray:
    found = [vectors[w] for w in words(claim) if w in vectors]
    return np.max(np.stack(found), axis=0) if found else np.zeros(dim)


def features(task: str, split: Split, vectors: dict[str, np.ndarray]) -> np.ndarray:
    if task == "factcheck":  # pairs are (claim, evidence): the claim alone carries the bias
        dim = len(next(iter(vectors.values())))
        return np.stack([claim_features(a, vectors, dim) for a in split.text_a])
    return np.stack([overlap_features(a, b, vectors) for a, b in zip(split.text_a, split.text_b)])


# --- word vectors ---------------------------------------------------------------------------

def vocabulary(data: TaskData) -> set[str]:
    vocab = set()
    for split in [data.train, *data.eval_splits.values()]:
        for text in split.text_a + split.text_b:
            vocab.update(words(text))
    return vocab


def backbone_vectors(vocab: set[str], tokenizer, embeddings) -> dict[str, np.ndarray]:
    """Unit-normalised mean word-piece input embedding of each word."""
    table = embeddings.detach().float().cpu().numpy()
    vectors = {}
    for word in sorted(vocab):
        ids = tokenizer(word, add_special_tokens=False)["input_ids"]
        if ids:
            v = table[ids].mean(axis=0)
            vectors[word] = v / (np.linalg.norm(v) + 1e-12)
    return vectors


def fasttext_vectors(path: str | Path, vocab: set[str]) -> dict[str, np.ndarray]:
    """Read a fastText .vec text file (header line, then `word v1 ... vd`), keeping `vocab`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"word_vectors file {path} does not exist (expected a fastText .vec file)")
    vectors = {}
    with path.open(encoding="utf-8", errors="replace") as handle:
        first = handle.readline().split()
        if len(first) != 2:  # no header: the first line is already a vector
            handle.seek(0)
        for line in handle:
            word, _, rest = line.rstrip().partition(" ")
            if word in vocab:
                v = np.array(rest.split(), dtype=np.float32)
                vectors[word] = v / (np.linalg.norm(v) + 1e-12)
    if not vectors:
        raise ValueError(f"{path}: no vectors for any word of the data")
    return vectors


# --- the bias model -------------------------------------------------------------------------

@dataclass
class BiasPredictions:
    """Bias model probabilities for every split (train: out-of-fold)."""

    probs: dict[str, np.ndarray]
    vectors_source: str

    def accuracy(self, data: TaskData, split: str) -> float:
        target = data.train if split == "train" else data.eval_splits[split]
        return split_metric(data.metric_of(split), target, self.probs[split].argmax(axis=1))


def fit_bias_model(task: str, data: TaskData, vectors: dict[str, np.ndarray], folds: int = 5, seed: int = 0):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train = features(task, data.train, vectors)
    y_train = data.train.labels
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0))
    n_classes = len(data.label_names)
    smallest = np.bincount(y_train, minlength=n_classes).min()
    cv = StratifiedKFold(n_splits=max(2, min(folds, smallest)), shuffle=True, random_state=seed)
    probs = {"train": _full_probs(cross_val_predict(model, x_train, y_train, cv=cv, method="predict_proba"),
                                  np.unique(y_train), n_classes)}
    model.fit(x_train, y_train)
    for name, split in data.eval_splits.items():
        probs[name] = _full_probs(model.predict_proba(features(task, split, vectors)), model.classes_, n_classes)
    return probs


def _full_probs(probs: np.ndarray, classes, n_classes: int) -> np.ndarray:
    """Columns for every model class (a class absent from training gets probability ~0)."""
    out = np.full((len(probs), n_classes), 1e-6)
    out[:, np.asarray(classes)] = probs
    return out / out.sum(axis=1, keepdims=True)


# --- the authors' predictions (bias_model_preds/ of github.com/llyx97/sparse-and-robust-PLM) ----
# per task: the file under bias_path, and for each of our classes its column in their label order
# (their MNLI processor orders [contradiction, entailment, neutral]; QQP and FEVER match ours).
# Values are log-probabilities. The .npy files hold one row per training example, indexed by
# the example's id (MNLI: the index column; FEVER: the row number); QQP's .pkl maps pair ids to
# rows, and training examples without an entry are dropped, as the authors' rebuild_trainset does.
AUTHORS_FILES = {"nli": ("MNLI/log_probs.npy", [1, 2, 0]), "paraphrase": ("QQP/log_probs.pkl", [0, 1]),
                 "factcheck": ("fever/log_probs.npy", [0, 1, 2])}
AUTHORS_SOURCE = "github.com/llyx97/sparse-and-robust-PLM (its bias_model_preds/ folder)"


class _NumbersOnly(pickle.Unpickler):
    """Unpickles plain containers of numbers and numpy arrays, and nothing that could run code:
    the authors' QQP file comes from a data folder that may be anyone's."""

    ARRAYS = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
              ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
              ("numpy._core.multiarray", "scalar")}

    def find_class(self, module, name):
        if (module, name) in self.ARRAYS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"it refers to {module}.{name}; only a dict of example ids to "
                                     "log-probabilities is accepted (nothing in it may run code)")


DEFAULT_BIAS_PATH = "data/bias_model_preds"  # RunConfig.bias_path unset


def authors_files(task: str, folder: str | Path | None, data_path: str | Path | None = None) -> list[Path]:
    """Where the authors' bias predictions of `task` are looked for, in order: under `folder`
    (RunConfig.bias_path; default data/bias_model_preds), and where that is the default also in a
    bias_model_preds/ folder beside the data folder (`data_path`, RunConfig.data.path), where their
    repository keeps it and their scripts read it (bias_dir=$ROOT_DIR/bias_model_preds/<TASK>/...)."""
    name, _ = AUTHORS_FILES[task]
    folders = [data_folder(folder or DEFAULT_BIAS_PATH)]
    if str(folder or DEFAULT_BIAS_PATH) == DEFAULT_BIAS_PATH:
        data = data_folder(data_path)
        folders += [data / "bias_model_preds", data.parent / "bias_model_preds"]
    return list(dict.fromkeys(f / name for f in folders))


def authors_predictions(task: str, train: Split, folder: str | Path | None,
                        data_path: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities in our label order, indices of the training rows they belong to), from the
    first of authors_files that exists."""
    name, columns = AUTHORS_FILES[task]
    looked = authors_files(task, folder, data_path)
    path = next((p for p in looked if p.is_file()), looked[0])
    if not path.is_file():
        also = f" (nor {', '.join(map(str, looked[1:]))})" if looked[1:] else ""
        raise DataFileError(f"authors' bias predictions: {looked[0]} not found{also}; get it from "
                            f"{AUTHORS_SOURCE}, or set bias_model=ours (our out-of-fold bias model)")
    if train.ids is None:
        raise DataFileError(f"authors' bias predictions ({path}) are keyed by example id, and this {task} "
                            "training data has none: read it from the original files (data.source=local)")
    try:
        if path.suffix == ".pkl":
            with path.open("rb") as handle:
                loaded = _NumbersOnly(handle).load()
            if not isinstance(loaded, dict):
                raise ValueError(f"a {type(loaded).__name__}, expected a dict of example ids to log-probabilities")
            table = {int(k): np.asarray(v, dtype=np.float64) for k, v in loaded.items()}
            kept = np.array([i for i, key in enumerate(train.ids) if int(key) in table], dtype=np.int64)
            log_probs = np.stack([table[int(train.ids[i])] for i in kept]) if len(kept) else np.zeros((0, len(columns)))
        else:
            array = np.load(path)
            if train.ids.max() >= len(array):
                raise DataFileError(f"{path}: {len(array)} rows, but the training data has example id "
                                    f"{int(train.ids.max())}: not the predictions for this file")
            kept, log_probs = np.arange(len(train)), array[train.ids]
    except (OSError, ValueError, pickle.UnpicklingError) as err:
        raise DataFileError(f"{path}: not readable as the authors' bias predictions ({err})") from None
    if log_probs.ndim != 2 or log_probs.shape[1] != len(columns):
        raise DataFileError(f"{path}: expected {len(columns)} log-probabilities per example, got shape "
                            f"{log_probs.shape}")
    if 2 * len(kept) < len(train):
        raise DataFileError(f"{path}: holds predictions for {len(kept)} of the {len(train)} training examples' ids: "
                            f"not the predictions for this {task} training file")
    probs = np.exp(log_probs[:, columns])
    bad = np.flatnonzero(~np.isfinite(probs).all(axis=1) | ~(probs.sum(axis=1) > 0))
    if len(bad):
        where = int(train.ids[kept[bad[0]]])
        raise DataFileError(f"{path}: the row of example id {where} is {log_probs[bad[0]].tolist()} ({len(bad)} rows "
                            "not log-probabilities: NaN, +inf or all -inf)")
    return probs / probs.sum(axis=1, keepdims=True), kept


def bias_predictions(task: str, data: TaskData, tokenizer, embeddings, backbone: str,
                     word_vectors: str | None = None) -> BiasPredictions:
    source = f"fastText:{word_vectors}" if word_vectors else f"backbone input embeddings ({backbone})"
    parts = [task, source] + [split_fingerprint(s) for s in [data.train, *data.eval_splits.values()]]
    key = hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]
    path = paths.cache_dir("bias") / f"{key}.npz"
    if path.exists():
        stored = np.load(path)
        return BiasPredictions({k: stored[k] for k in stored.files}, source)
    vocab = vocabulary(data)
    vectors = fasttext_vectors(word_vectors, vocab) if word_vectors else backbone_vectors(vocab, tokenizer, embeddings)
    probs = fit_bias_model(task, data, vectors)
    with paths.replacing(path) as tmp:
        np.savez(tmp, **probs)
    return BiasPredictions(probs, source)
