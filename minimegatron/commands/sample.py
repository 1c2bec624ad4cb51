"""``minimegatron sample``: load a checkpoint and let the GPT write text.

    python -m minimegatron sample --checkpoint out/3d_gpt.npz --prompt "In " --tokens 200

A checkpoint is always ONE full, serial-named file, whatever grid saved it
(tools/checkpoint.py gathers the shards when saving), so this command needs no
MPI: it reads the file with every check of ``read_checkpoint`` (crc32, sizes,
finite values), builds ``nn.GPT`` from the config in its meta (``MoEGPT``
when meta holds an MoE config: the experts of every ep rank are in the file,
so the one process runs all E of them), copies each
full weight in and calls ``GPT.generate`` (nn/generate.py). The optimizer state
in the file is not needed and is skipped.

Text is characters of the shipped corpus (datasets.tiny_corpus, 36 characters,
sorted: ``CharTokenizer``), so the checkpoint's vocab_size must be that size: a
model trained on the repeat task (vocab 24) has no text to write. A missing or
damaged file, such a model, or a prompt character outside the vocabulary ends
in one line, ``error: ...``, with exit status 2.
"""
import argparse
import dataclasses

from minimegatron.commands.argtypes import finite_positive_float, nonnegative_int, positive_int
from minimegatron.backend import asarray
from minimegatron.data.datasets import CharTokenizer, tiny_corpus
from minimegatron.commands.entry import run
from minimegatron.nn import GPT, GPTConfig
from minimegatron.nn.moe import MoEConfig, MoEGPT
from minimegatron.tools.checkpoint_format import CheckpointError, read_checkpoint


def load_gpt(path):
    """nn.GPT (MoEGPT for an MoE checkpoint) with the weights of the checkpoint at ``path``
    (saved from any grid: an expert weight holds all E experts)."""
    arrays, meta = read_checkpoint(path)
    saved = meta.get("config")
    fields = {f.name for f in dataclasses.fields(GPTConfig)}
    if not isinstance(saved, dict) or set(saved) != fields:
        raise CheckpointError(f"checkpoint {path!r} is corrupt: its config is {saved!r}")
    config = GPTConfig(**saved)                         # GPTConfig checks every value
    moe = meta.get("moe")
    if moe is None:
        model = GPT(config)
    elif isinstance(moe, dict) and set(moe) == {f.name for f in dataclasses.fields(MoEConfig)}:
        model = MoEGPT(config, MoEConfig(**moe))        # MoEConfig checks every value
    else:
        raise CheckpointError(f"checkpoint {path!r} is corrupt: its MoE config is {moe!r}")
    for name, p in model.named_parameters():
        full = arrays.get(f"param/{name}")
        if full is None or full.shape != p.shape:
            got = None if full is None else full.shape
            raise CheckpointError(f"checkpoint {path!r}: {name} is {got} in the file, the "
                                  f"config's GPT has {p.shape}")
        p.data[...] = asarray(full)
    return model


def encode_prompt(prompt, tokenizer):
    """The prompt's ids; a ValueError naming the first character the vocabulary lacks."""
    missing = [c for c in prompt if c not in tokenizer.index]
    if missing:
        raise ValueError(f"the prompt's character {missing[0]!r} is not in the vocabulary "
                         f"({''.join(tokenizer.chars)!r})")
    if not prompt:
        raise ValueError("the prompt is empty: give at least one character (--prompt)")
    return tokenizer.encode(prompt)


def write(args):
    model = load_gpt(args.checkpoint)
    tokenizer = CharTokenizer(tiny_corpus())
    vocab = model.config.vocab_size
    if vocab != tokenizer.vocab_size:
        raise ValueError(f"checkpoint {args.checkpoint!r}: its GPT has a vocabulary of {vocab} "
                         f"tokens, the shipped corpus has {tokenizer.vocab_size} characters: "
                         f"it was not trained on text (tutorials/08_3d_parallel.py --save is)")
    prompt = [encode_prompt(args.prompt, tokenizer)]                   # (1, T)
    ids = model.generate(prompt, args.tokens, args.temperature, args.top_k, args.seed)
    print(tokenizer.decode(ids[0]))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="minimegatron sample", description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True, help="a file written by save_checkpoint")
    ap.add_argument("--prompt", default="In ", help="the text to continue (default 'In ')")
    ap.add_argument("--tokens", type=nonnegative_int, default=200, help="characters to write")
    ap.add_argument("--temperature", type=finite_positive_float, default=0.8)
    ap.add_argument("--top-k", type=positive_int, default=None, help="keep the k likeliest")
    ap.add_argument("--seed", type=nonnegative_int, default=0)
    return run(write, "sample", ap.parse_args(argv))
