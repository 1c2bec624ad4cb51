"""The names ranks agree on, in Korean: a CollectiveMismatch of the training plan, the
process grid, the optimizer... reads as one Korean sentence under MINIMEGATRON_LANG=ko.

The book names what its ranks agree on in English (comm/agreement.agree_fields,
comm_check.agree, comm_check.agreed_step) and keeps it; book_errors reads each name back
through i18n/en_errors.NAMES. ``book_names`` finds every name the code passes, so a new
agreement without a Korean name fails here; each is put into a message the book raised on
2 real ranks (test_book_errors' one launch) and translated: the English name is gone, the
Korean one takes its particle, the field names and the call site stay as they are.
"""
import glob
import os
import re

import pytest

from minimegatron.i18n import book_errors, en_errors, ko_errors
from mpi_harness import REPO_ROOT
from test_book_errors import message

# a string literal as the name argument of the three ways the book agrees
CALL = re.compile(r"(?:agree_fields\(\s*[^,()]+,|comm_check\.agree\(\s*[^,()]+,|"
                  r"agreed_step\()\s*f?\"([^\"]*)\"")
SCHEME = "pp-gpipe"                                    # verify row {scheme}'s example
# each name as the subject of a Korean sentence: its particle as the name is read
SUBJECT = {"name.training_plan": "학습 계획이", "name.process_grid": "프로세스 grid가",
           "name.optimizer": "optimizer가", "name.zero_optimizer": "ZeRO optimizer가",
           "name.context_parallelism": "context parallel 설정이", "name.step_inputs": "step의 입력이",
           "name.pipeline_batch": "pipeline step의 batch가",
           "name.verify_row": "verify의 pp-gpipe 행이",
           "name.engine": "PipelineEngine 설정이", "name.zero_layout": "ZeRO shard 구성이",
           "name.ddp_layout": "DistributedDataParallel bucket 구성이"}


def book_names(text):
    """The names ``text`` passes to agree_fields, comm_check.agree or agreed_step."""
    return set(CALL.findall(text))


def code_names():
    names = set()
    for path in glob.glob(os.path.join(REPO_ROOT, "minimegatron", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            names |= book_names(f.read())
    return names


def test_every_name_the_code_agrees_on_has_its_korean():
    assert code_names() == set(en_errors.NAMES.values())
    assert sorted(en_errors.NAMES) == sorted(ko_errors.NAMES)
    planted = 'agree_fields(grid.world, "the data order", fields)\n' \
              'with comm_check.agreed_step(f"row {x}", {}):'
    assert book_names(planted) == {"the data order", "row {x}"}       # the scan finds one


@pytest.mark.parametrize("key", sorted(en_errors.NAMES))
def test_a_mismatch_of_each_name_is_all_korean(key):
    """The name inside each framing the book raises (fields differ, its fields differ, a
    description differs), each translated whole."""
    english = en_errors.NAMES[key].format(scheme=SCHEME)
    korean = ko_errors.NAMES[key].format(scheme=SCHEME)
    raised = {"mismatch.fields": ("context parallelism", f"({SUBJECT[key]} 다음 항목에서 "
                                                         "다릅니다: split. "),
              "mismatch.fields_all": ("the training plan", f"({korean}의 항목 자체가 다릅니다. "),
              "mismatch.differs": ("shape", f"({SUBJECT[key]} 다릅니다)")}
    for pattern, (name, after) in raised.items():
        said = message(pattern).replace(name, english, 1)
        used = []
        translated = book_errors.translate(said, "ko", used)
        assert key in used and pattern in used, (said, used)
        head = translated.splitlines()[0]
        assert english not in translated and not re.search(r"\bthe\b|differs", translated), \
            translated
        assert after in head, head
        assert len(translated.splitlines()) == len(said.splitlines()) == 3
        for line, ko_line in zip(said.splitlines()[1:], translated.splitlines()[1:]):
            call, _, site = line.partition("): ")[2].rpartition(" at ")   # field=value, file:line
            assert ko_line.endswith(f"{site}에서 {call}"), (line, ko_line)
    assert book_errors.translate(said, "en") == said


def test_the_optimizer_takes_its_particle_and_an_unknown_name_stays_english():
    said = message("mismatch.fields").replace("context parallelism", "the optimizer", 1)
    assert "(optimizer가 다음 항목에서 다릅니다: split. " in book_errors.translate(said, "ko")
    unknown = message("mismatch.fields").replace("context parallelism", "the data order", 1)
    assert "the data order" in book_errors.translate(unknown, "ko")    # what the test catches
