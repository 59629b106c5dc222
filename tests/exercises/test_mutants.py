"""The usual wrong answers fail, each with a message that points at the mistake; the right
answers pass."""
import io

import pytest

from tinyattn import exercises

import solutions as S

MUTANTS = [
    ("softmax", S.SOFTMAX_OVERFLOWS, "large inputs overflow exp()"),
    ("sum_to_size", S.SUM_TO_NOT_SUMMED, "a broadcast gradient must be summed back"),
    ("sdpa", S.SDPA_FLIPPED_MASK, "the bool mask's polarity is flipped"),
    ("sdpa", S.SDPA_NO_SCALE, "missing 1/sqrt(d)"),
    ("layer_norm", S.LAYER_NORM_NO_MEAN_TERMS, "forgets the mean's terms"),
    ("kv_cache", S.KV_CACHE_REAPPENDS, "the KV cache re-appends"),
]


def grade(name, text):
    out = io.StringIO()
    ok = exercises.check(name, text=text, demo=False, out=out)
    return ok, out.getvalue()


@pytest.mark.parametrize("name, text, message", MUTANTS,
                         ids=[f"{m[0]}-{m[2][:24]}" for m in MUTANTS])
def test_each_usual_wrong_answer_fails_with_its_message(name, text, message):
    ok, report = grade(name, text)
    assert not ok, report
    assert "FAIL" in report and message in report, report


@pytest.mark.parametrize("name, text", [("softmax", S.SOFTMAX), ("sum_to_size", S.SUM_TO),
                                        ("sdpa", S.SDPA), ("positional", S.POSITIONAL),
                                        ("layer_norm", S.LAYER_NORM), ("kv_cache", S.KV_CACHE)])
def test_a_students_correct_file_passes(name, text):
    ok, report = grade(name, text)
    assert ok, report
    assert "FAIL" not in report


def test_a_failure_shows_the_input_expected_got_and_a_hint():
    ok, report = grade("sdpa", S.SDPA_NO_SCALE)
    block = report.split("FAIL", 1)[1]
    for label in ("input:", "expected:", "got:", "hint:"):
        assert label in block, report
