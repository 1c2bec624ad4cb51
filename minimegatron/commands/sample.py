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
import dataclasses

from minimegatron.commands.argtypes import finite_positive_float, nonnegative_int, positive_int
from minimegatron.backend import asarray
from minimegatron.data.datasets import CharTokenizer, tiny_corpus
from minimegatron.commands.entry import run
from minimegatron.commands.parser import ArgumentParser, say
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
        raise ValueError(say("cli.sample.not_in_vocab", char=repr(missing[0]),
                             chars=repr("".join(tokenizer.chars))))
    if not prompt:
        raise ValueError(say("cli.sample.empty"))
    return tokenizer.encode(prompt)


def write(args):
    model = load_gpt(args.checkpoint)
    tokenizer = CharTokenizer(tiny_corpus())
    vocab = model.config.vocab_size
    if vocab != tokenizer.vocab_size:
        raise ValueError(say("cli.sample.not_text", path=repr(args.checkpoint), vocab=vocab,
                             chars=tokenizer.vocab_size))
    prompt = [encode_prompt(args.prompt, tokenizer)]                   # (1, T)
    ids = model.generate(prompt, args.tokens, args.temperature, args.top_k, args.seed)
    print(tokenizer.decode(ids[0]))
    return 0


def main(argv=None):
    def msg(key):
        return say(f"cli.sample.{key}")
    ap = ArgumentParser(prog="minimegatron sample", description=msg("description"))
    ap.add_argument("--checkpoint", required=True, metavar="FILE", help=msg("checkpoint"))
    ap.add_argument("--prompt", default="In ", metavar="TEXT", help=msg("prompt"))
    ap.add_argument("--tokens", type=nonnegative_int, default=200, metavar="N",
                    help=msg("tokens"))
    ap.add_argument("--temperature", type=finite_positive_float, default=0.8, metavar="T",
                    help=msg("temperature"))
    ap.add_argument("--top-k", type=positive_int, default=None, metavar="K", help=msg("top_k"))
    ap.add_argument("--seed", type=nonnegative_int, default=0, metavar="N", help=msg("seed"))
    return run(write, "sample", ap.parse_args(argv))
