"""Korean particles (조사) chosen by the word they follow: "tp=3으로", "tp=2로", "rank를".

A Korean particle has two forms, one after a syllable with a final consonant (받침), one
after a vowel: 을/를, 이/가, 은/는, 과/와, 으로/로 (and after a final ㄹ, 로: "1로", "칠로").
A template writes the first form after a {field} ("{tp}으로", "{name}을"); ``format`` fills
the fields and then gives each such particle the form its value's last sound asks for, so a
message never shows a placeholder like 을(를).

How the last sound is read:
- a Hangul syllable: its own final consonant (가 none, 각 ㄱ, 갈 ㄹ);
- a digit, as the number is read in Korean: 0 영, 1 일, 2 이, 3 삼, 4 사, 5 오, 6 육, 7 칠,
  8 팔, 9 구, and a number ending in zeros by its last power of ten (10 십, 100 백,
  1000 천, 10000 만): "3을", "4를", "10을", "100을", "20으로", "1.5를";
- Latin letters, as English is read: a short name of letters (tp, dp, GPU, MLP) by the
  name of its last letter (L 엘, M 엠, N 엔, R 알 end in a consonant; 피, 유 do not); a
  word by its ending (m, n, ng, l end in ㅁ, ㄴ, ㅇ, ㄹ, and so do le, ne, me with their e
  silent: sample 샘플, timeline 타임라인, name 네임; a final p or b after a vowel, as in
  group, step, ㅂ; -ack, -ick, -ock, -uck ㄱ: block 블록, stack 스택; -out, -put, -set and
  -lit, -mit, -nit ㅅ: timeout 타임아웃, output 아웃풋, offset 오프셋, split 스플릿; others,
  as in rank 랭크, stage 스테이지, weight 웨이트, a vowel); an option by its last word
  ("--timeout을", "--steps를");
- a file name by how its extension is read (``EXTENSIONS``): mostly letter by letter (png
  피엔지, npz 엔피지, md 엠디, html 에이치티엠엘), some as a word (json 제이슨, zip 집):
  "timeline.png를", "trace.json을", "page.html로";
- closing quotes, brackets and spaces are skipped ("'a.npz'를", "(B, T)를").
"""
import re
import string

# first form (after a final consonant) -> second form (after a vowel)
PAIRS = {"을": "를", "이": "가", "은": "는", "과": "와", "으로": "로"}
SECOND = {second: first for first, second in PAIRS.items()}
# a particle right after a field (or after the quote or bracket that closes it), then the end
# or a non-Hangul character (으로/로 may go on: 으로는, 로서, 로부터)
PARTICLE = re.compile(r"^([\'\"`)\]]*)(으로|로|을|를|이|가|은|는|과|와)(?=$|[^\uac00-\ud7a3]|"
                      r"(?<=로)(?:는|서|부터|도|만|의))")
DIGIT_FINAL = {"0": "ㅇ", "1": "ㄹ", "2": "", "3": "ㅁ", "4": "", "5": "", "6": "ㄱ",
               "7": "ㄹ", "8": "ㄹ", "9": ""}
ZEROS_FINAL = {1: "ㅂ", 2: "ㄱ", 3: "ㄴ"}                   # 십, 백, 천
LARGE_FINAL = {1: "ㄴ", 2: "ㄱ", 3: ""}                     # 만, 억, 조 (120000: 십이만)
LETTER_FINAL = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ", "r": "ㄹ"}  # 엘, 엠, 엔, 알; the others none
ACRONYMS = {"tp", "dp", "pp", "cp", "ep", "edp", "sp", "mp", "id", "cpu", "gpu", "mlp",
            "ddp", "fsdp", "bf16", "fp16", "fp32", "lse", "rng", "npz", "mpi"}
# a file's extension -> the final consonant of its reading (a known extension only: a dotted
# name such as 'h.0.attn.qkv.weight' is read by its last word)
EXTENSIONS = {"png": "", "svg": "", "pdf": "", "jpg": "", "gif": "", "jpeg": "ㄱ",  # 제이펙
              "json": "ㄴ", "jsonl": "ㄹ", "npz": "", "npy": "", "py": "", "md": "",   # 제이슨
              "txt": "", "csv": "", "html": "ㄹ", "yaml": "ㄹ", "yml": "ㄹ", "toml": "ㄹ",
              "log": "", "pt": "", "pkl": "ㄹ", "gz": "", "tar": "", "zip": "ㅂ", "sh": ""}
FILE = re.compile(r"[\w-]\.([A-Za-z0-9]+)$")
# English endings read with a final consonant: block 블록, timeout 타임아웃, split 스플릿
ENDINGS = {"ack": "ㄱ", "ick": "ㄱ", "ock": "ㄱ", "uck": "ㄱ", "out": "ㅅ", "put": "ㅅ",
           "set": "ㅅ", "lit": "ㅅ", "mit": "ㅅ", "nit": "ㅅ"}
SKIPPED = "'\"`)]}>」』 "
FINALS = "ㄱㄲㄳㄴㄵㄶㄷㄹㄺㄻㄼㄽㄾㄿㅀㅁㅂㅄㅅㅆㅇㅈㅊㅋㅌㅍㅎ"


def final_consonant(word):
    """The final consonant of ``word`` as Korean reads it: "" for a vowel, else the jamo
    ("ㄹ" matters: it takes 로, not 으로); None when nothing in it can be read."""
    word = word.rstrip(SKIPPED)
    if not word:
        return None
    last = word[-1]
    if "\uac00" <= last <= "\ud7a3":
        index = (ord(last) - 0xAC00) % 28
        return FINALS[index - 1] if index else ""
    if last.isdigit():
        number = re.search(r"[\d,]*\d$", word).group(0).replace(",", "")
        decimal = word[:-len(number)].endswith(".") if len(word) > len(number) else False
        zeros = len(number) - len(number.rstrip("0"))
        if decimal or not zeros:
            return DIGIT_FINAL[last]
        if zeros == len(number):
            return "ㅇ"                                     # 0, 영
        return ZEROS_FINAL[zeros] if zeros < 4 else LARGE_FINAL[min(zeros // 4, 3)]
    file = FILE.search(word)
    if file and file.group(1).lower() in EXTENSIONS:
        return EXTENSIONS[file.group(1).lower()]
    name = re.search(r"[A-Za-z0-9]+$", word)
    if not name:
        return None
    return _english_final(name.group(0))


def _english_final(name):
    """The final sound of an English name: letter by letter for acronyms, else its ending."""
    lower = name.lower()
    if lower in ACRONYMS or name.isupper() or len(name) == 1:
        return LETTER_FINAL.get(lower[-1], "")
    if lower.endswith("ng"):
        return "ㅇ"
    if len(lower) > 2 and lower[-1] == "e" and lower[-2] in "lnm":     # a silent e: sample
        return {"l": "ㄹ", "n": "ㄴ", "m": "ㅁ"}[lower[-2]]         # 샘플, timeline, name
    if lower[-1] in "mnl":
        return {"m": "ㅁ", "n": "ㄴ", "l": "ㄹ"}[lower[-1]]
    if lower[-1] in "pb" and len(lower) > 1 and lower[-2] in "aeiou":
        return "ㅂ"
    return ENDINGS.get(lower[-3:], "")


def particle(word, first):
    """The form of particle ``first`` (을, 이, 은, 과, 으로) that follows ``word``."""
    final = final_consonant(word)
    if final is None:
        final = "ㄱ"                     # unreadable (a symbol): the consonant form
    if first == "으로":
        return "로" if final in ("", "ㄹ") else "으로"
    return PAIRS[first] if final == "" else first


class _Formatter(string.Formatter):
    """``str.format`` whose particles after a field follow the field's value."""

    def vformat(self, format_string, args, kwargs):
        out, value = [], None
        for literal, field, spec, conversion in self.parse(format_string):
            if value is not None:
                literal = fix_particle(value, literal)
            out.append(literal)
            value = None
            if field is not None:
                obj, _ = self.get_field(field, args, kwargs)
                value = self.format_field(self.convert_field(obj, conversion),
                                          self.vformat(spec, args, kwargs) if spec else "")
                out.append(value)
        return "".join(out)


def fix_particle(value, following):
    """``following`` (the text after a value) with its leading particle fitted to ``value``."""
    match = PARTICLE.match(following)
    if not match or not value:
        return following
    first = SECOND.get(match.group(2), match.group(2))
    return match.group(1) + particle(value, first) + following[match.end(2):]


class Percent(str):
    """A %-template (argparse's own, "인자 %s과 함께 ...") whose particle after each %s or
    %(name)s follows the value put there."""

    SPEC = re.compile(r"%(?:\((\w+)\))?([sr])")

    def __mod__(self, values):
        ordered = iter(values if isinstance(values, tuple) else (values,))
        out, start, value = [], 0, None
        for spec in self.SPEC.finditer(self):
            literal = self[start:spec.start()]
            out.append(literal if value is None else fix_particle(value, literal))
            name, kind = spec.groups()
            given = values[name] if name else next(ordered)
            value = str(given) if kind == "s" else repr(given)
            out.append(value)
            start = spec.end()
        tail = self[start:]
        return "".join(out) + (tail if value is None else fix_particle(value, tail))


def percent(template):
    """``template`` as a ``Percent`` when a particle follows one of its %s, else as it is."""
    fitted = any(PARTICLE.match(template[spec.end():]) for spec in Percent.SPEC.finditer(template))
    return Percent(template) if fitted else template


_FORMATTER = _Formatter()


def format(template, /, *args, **fields):
    """``template.format(*args, **fields)`` with each particle after a field fitted to it."""
    return _FORMATTER.vformat(template, args, fields)
