"""trace.comm_by_dimension: bytes sent per grid dimension, by group name (no MPI).

Before, only dp / pp / tp were counted (by the name's first two letters): cp, ep and edp
were lost, and dp x cp ("dp_cp0") was counted as dp. Real runs: tutorials 12 and 14
print these sums beside their formulas (tests/test_context_parallel.py,
tests/test_tutorials.py).
"""
from minimegatron.comm import trace


def span(group, sent, kind="comm"):
    s = trace.template("all_reduce", group, sent, sent, sent)
    s["kind"] = kind
    return s


def test_every_dimension_is_counted_by_its_group_name():
    spans = [span("tp0", 1), span("tp1", 2), span("dp3", 4), span("pp0", 8), span("cp1", 16),
             span("ep2", 32), span("dp_cp0", 64), span("edp1", 128), span("edp12", 256),
             span("world", 512), span("grid", 1024), span("verify4", 2048),
             span("cp0", 4096, kind="compute")]
    assert trace.comm_by_dimension(spans) == {"dp": 4, "pp": 8, "tp": 3, "cp": 16, "ep": 32,
                                              "dp_cp": 64, "edp": 384}
    assert trace.comm_by_dimension([]) == dict.fromkeys(trace.DIMENSIONS, 0)


def test_dimension_of_names():
    assert [trace.dimension_of(n) for n in ("tp12", "dp_cp3", "edp0", "ep", "world", None,
                                            "deep0")] == ["tp", "dp_cp", "edp", "ep", None,
                                                          None, None]
