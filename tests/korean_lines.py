"""What counts as an English-only line of output under MINIMEGATRON_LANG=ko.

The rule (the Korean output keeps identifiers, numbers, commands and the technical terms
the lecture notes keep in English, so "no ASCII letters" would be wrong):

1. A line with any Hangul syllable is Korean, whatever else it holds.
2. A line of text a model wrote, quoted after a bar (``  | In pipeline ...``), is not
   counted: it is data, in no language. Nor is a command (its first word is minimegatron,
   python, python3, pip, mpirun, mpiexec or ``.``, and none of its first three words ends
   in a colon, as "minimegatron memory: error: ..." does): commands are typed as they are.
3. Every other word is dropped when it is not prose: options (``--layers``), paths and
   file names (``/``, ``.`` or ``_`` inside), anything with a digit, ``=`` or a comma
   inside (``x=1``, ``{config,table1}``), hyphenated names (``pp-gpipe``, ``all-reduce``),
   words of three letters or fewer (``dp``, ``tp``, ``ddp``, ``M``), all-capital words
   (``PASS``, metavars) and CamelCase names (``DataParallel``), and the technical terms
   of ``KEPT`` (the glossary's terms the notes write in English inside Korean).
4. The line is English-only when two or more words are left.

``english_messages`` judges an error line on its message alone: the Korean label before it
("minimegatron memory: 오류: ", "경고: ", "사용법: ") does not make an English message Korean.

So "step  serial  DataParallel  DDP" is English-only (step, serial), "  --layers L"
and "  0.0123  [0, 1, 2, 3]" are not, and "minimegatron run -n 8 verify" is a command.
"""
import re

HANGUL = re.compile(r"[\uac00-\ud7a3]")
LABEL = re.compile(r"^.*?(?:오류|경고|사용법): ")
COMMANDS = {"minimegatron", "python", "python3", "pip", "mpirun", "mpiexec", "."}
KEPT = {"bubble", "gradient", "gradients", "forward", "backward", "rank", "ranks",
        "pipeline", "stage", "stages", "schedule", "micro", "batch", "tensor", "parallel",
        "expert", "experts", "token", "tokens", "attention", "loss", "zero", "naive",
        "interleaved", "ring", "allgather", "ulysses", "zigzag", "dropless", "float",
        "mixed", "full", "numpy", "cupy", "config", "scaling", "chunk", "chunks", "trace",
        "span", "spans", "logits", "seed", "master", "router", "group", "groups",
        "parameter", "parameters", "weight", "weights", "activation", "activations",
        "optimizer", "gather", "sequence", "softmax", "dispatch", "combine", "shard", "shards",
        "bucket", "buckets", "checkpoint"}
_PUNCT = "()[]{}<>:;,.!?'\"`|*"


def prose_words(line):
    """The words of ``line`` that are English prose (rule 3)."""
    words = []
    for token in line.split():
        word = token.strip(_PUNCT)
        if (len(word) <= 3 or not word.isascii() or not word.isalpha()
                or word.isupper() or any(c.isupper() for c in word[1:])
                or word.lower() in KEPT):
            continue
        words.append(word)
    return words


def english_only(line):
    """True when ``line`` reads as English under MINIMEGATRON_LANG=ko (the module's rule)."""
    if HANGUL.search(line):
        return False
    tokens = line.split()
    if tokens and tokens[0] == "|":
        return False
    if not tokens or tokens[0] in COMMANDS and not any(t.endswith(":") for t in tokens[:3]):
        return False
    return len(prose_words(line)) >= 2


def english_lines(text):
    """The English-only lines of ``text``, in order."""
    return [line for line in text.splitlines() if english_only(line)]


def english_messages(text):
    """The English-only lines of ``text``, each judged after its label (the module's end)."""
    return [line for line in text.splitlines() if english_only(LABEL.sub("", line, count=1))]
