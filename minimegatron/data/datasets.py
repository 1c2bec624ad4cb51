"""Small deterministic data made by code: nothing is downloaded.

``repeat_task``: each sequence is a random pattern of ``period`` tokens repeated
to fill ``seq_len + 1`` tokens; inputs are tokens 0..T-1, targets 1..T. The
first ``period`` targets are only guessable (loss log V); after that a model
that learns to copy from ``period`` steps back predicts perfectly. So the loss
falls from log V toward (period - 1) / T * log V: learning is visible.

``CharTokenizer`` and ``text_batches``: character-level language modelling on a
short text shipped inside the package (data/tiny_corpus.txt); ``known_words``
measures how word-like a generated text is.
"""
import os
import re

from minimegatron.backend import asarray, host_rng, to_numpy


def repeat_task(batch_size, seq_len, vocab_size, period=4, seed=0, step=0):
    """(inputs, targets), both (batch_size, seq_len) int arrays; deterministic per step."""
    _check_sizes(batch_size, seq_len)
    rng = host_rng(seed, f"repeat_task.{step}")
    pattern = rng.integers(0, vocab_size, size=(batch_size, 1, period))      # (B, 1, P)
    reps = seq_len // period + 1
    tokens = pattern.repeat(reps, axis=1).reshape(batch_size, reps * period)  # (B, reps*P)
    tokens = tokens[:, : seq_len + 1]                                          # (B, T + 1)
    return asarray(tokens[:, :-1]), asarray(tokens[:, 1:])


def _check_sizes(batch_size, seq_len):
    if batch_size < 1 or seq_len < 1:
        raise ValueError(f"a batch needs batch_size >= 1 and seq_len >= 1, got batch_size="
                         f"{batch_size}, seq_len={seq_len}")


class CharTokenizer:
    """Maps each distinct character of a text to an id (sorted order)."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self):
        return len(self.chars)

    def encode(self, text):
        return [self.index[c] for c in text]

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)


def tiny_corpus():
    """The short text shipped with the package."""
    path = os.path.join(os.path.dirname(__file__), "tiny_corpus.txt")
    with open(path, encoding="utf-8") as f:
        return f.read()


def text_batches(ids, batch_size, seq_len, seed=0, step=0):
    """(inputs, targets) of random windows of ``ids``: (batch_size, seq_len) each."""
    _check_sizes(batch_size, seq_len)
    rng = host_rng(seed, f"text_batches.{step}")
    ids = to_numpy(ids)
    starts = rng.integers(0, len(ids) - seq_len - 1, size=(batch_size, 1))
    tokens = ids[starts + to_numpy(range(seq_len + 1))]                       # (B, T + 1)
    return asarray(tokens[:, :-1]), asarray(tokens[:, 1:])


def known_words(text, corpus):
    """(found, total): how many words of ``text`` (runs of letters) are words of ``corpus``.

    Random characters rarely spell a word (a few percent, the one-letter "a");
    a model that learned the corpus mostly does.
    """
    vocabulary = set(re.findall(r"[a-z]+", corpus.lower()))
    words = re.findall(r"[a-z]+", text.lower())
    return sum(w in vocabulary for w in words), len(words)
