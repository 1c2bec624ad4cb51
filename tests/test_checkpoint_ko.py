"""A checkpoint's errors in Korean: real bad files and a mismatched model under ko, in one process.

tests/test_checkpoint.py checks the errors themselves (on 8 ranks, in English); here the
same errors, raised by read_checkpoint and load_checkpoint on files this test damages,
must read in Korean under MINIMEGATRON_LANG=ko and unchanged in English.
"""
import re
import string
import zipfile

import numpy as np
import pytest

from minimegatron import i18n, optim
from minimegatron.nn.gpt import GPT, GPTConfig
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.tools.checkpoint import (CheckpointError, load_checkpoint, read_checkpoint,
                                           save_checkpoint)

HANGUL = re.compile(r"[\uac00-\ud7a3]")


def fields(template):
    return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name)


@pytest.mark.parametrize("en, ko", [
    (i18n.en_checkpoint_errors.MESSAGES, i18n.ko_checkpoint_errors.MESSAGES),
    (i18n.en_reports.MESSAGES, i18n.ko_reports.MESSAGES)], ids=["checkpoint", "reports"])
def test_both_languages_have_the_same_keys_and_fields(en, ko):
    assert sorted(en) == sorted(ko)
    for key in en:
        assert fields(en[key]) == fields(ko[key]), key
        assert HANGUL.search(ko[key]) or key.startswith("report."), key   # headers: the
    # reports keep some words English (stage, weight, gradient); the line count holds them
    # (tests/test_cli_help.py, the memory and timeline runs)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ckpt_ko") / "gpt.npz")
    model = GPT(GPTConfig())
    save_checkpoint(model, optim.AdamW(model.parameters()), path, ProcessGrid())
    return path


def said(monkeypatch, lang, call):
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    with pytest.raises(CheckpointError) as error:
        call()
    return str(error.value)


def damaged(saved, tmp_path, how):
    """A copy of the saved file: garbage bytes, a compressed entry, or no meta record."""
    path = str(tmp_path / f"{how}.npz")
    if how == "garbage":
        open(path, "wb").write(b"not a zip at all" * 4)
        return path
    with zipfile.ZipFile(saved) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            if how == "no_meta" and info.filename == "meta.npy":
                continue
            kind = zipfile.ZIP_DEFLATED if how == "compressed" else zipfile.ZIP_STORED
            dst.writestr(info.filename, src.read(info), compress_type=kind)
    return path


@pytest.mark.parametrize("how, english, korean", [
    ("missing", "no such file", "그런 파일이 없습니다"),
    ("directory", "is a directory, not a file", "파일이 아니라 디렉터리입니다"),
    ("garbage", "is truncated or corrupt (cannot read it: BadZipFile",
     "잘렸거나 손상되었습니다 (읽을 수 없음: BadZipFile"),
    ("compressed", "is corrupt: entry 'param/wte.weight.npy' is compressed or "
     "encrypted",
     "손상되었습니다: 항목 'param/wte.weight.npy'가 압축되었거나 "
     "암호화되었습니다"),
    ("no_meta", "is corrupt: no readable 'meta' record",
     "손상되었습니다: 읽을 수 있는 'meta' 기록이 없습니다")])
def test_a_bad_file_is_refused_in_korean(how, english, korean, saved, tmp_path, monkeypatch):
    path = {"missing": str(tmp_path / "none.npz"), "directory": str(tmp_path)}.get(how) or \
        damaged(saved, tmp_path, how)
    assert english in said(monkeypatch, "en", lambda: read_checkpoint(path))
    text = said(monkeypatch, "ko", lambda: read_checkpoint(path))
    assert korean in text and english not in text, text


def test_a_model_of_another_config_is_refused_in_korean(saved, monkeypatch):
    model = GPT(GPTConfig(seed=1))
    load = lambda: load_checkpoint(model, optim.AdamW(model.parameters()), saved,  # noqa: E731
                                   ProcessGrid())
    assert said(monkeypatch, "en", load) == (
        f"checkpoint {saved!r} was saved for a different config: seed: file 0 vs model 1")
    assert said(monkeypatch, "ko", load) == (
        f"checkpoint {saved!r}는 다른 config로 저장되었습니다: seed: 파일 0, 모델 1")
