"""The scale driver: list schedules, the tied exact search, dropping redundant overlaps."""

from __future__ import annotations

from schedsearch.handcrafted import dualpipe as dualpipe_schedule
from schedsearch.placements import dualpipe, dualpipev, vshape
from schedsearch.result import Status
from schedsearch.search.scale import scale_search
from schedsearch.validate import validate


def test_list_scheduling_answers_when_it_reaches_the_bound():
    p = dualpipe(8, 16, memory=9)
    r = scale_search(p, warm_starts=[dualpipe_schedule(dualpipe(8, 16))], time_limit_s=30)
    assert r.status is Status.OPTIMAL and r.objective == r.lower_bound == 3 + 3 * 16
    assert r.stats["overlaps_dropped"] and r.engine.startswith("list scheduling")
    assert "exact_s" not in r.stats
    assert validate(p, r.schedule) == ()


def test_warm_start_stands_when_nothing_beats_it():
    p = vshape(3, 4, memory=3)
    from schedsearch.handcrafted import one_f_one_b

    hand = one_f_one_b(p)
    r = scale_search(p, warm_starts=[hand], rules=(), exact=False, time_limit_s=5)
    assert r.schedule is hand and r.status is Status.OPTIMAL  # 1F1B reaches the bound


def test_tied_exact_search_when_list_scheduling_fails():
    # three activations per device cannot run DualPipe's PP=4 forward-first: the list rules
    # deadlock or fall short, and a periodic-tied exact search finds a valid schedule
    p = dualpipe(4, 16, memory=3).with_(overlaps=())
    r = scale_search(p, rules=(), ties="periodic", time_limit_s=20)
    assert r.schedule is not None and validate(p, r.schedule) == ()
    assert r.ties > 0 and r.engine == "exact search (cpsat, tied)"
    assert r.lower_bound == 1 + 3 * 16 and r.status in (Status.FEASIBLE, Status.OPTIMAL)


def test_exact_search_with_saving_pairs():
    # DualPipeV with F&B = 2 < F + B on 2 devices, 4 micro-batches: the handcrafted schedule
    # takes 22, the search proves 21 and uses overlapped pairs to get there
    p = dualpipev(2, 4, overlap=2)
    from schedsearch.handcrafted import dualpipev as dualpipev_schedule

    hand = dualpipev_schedule(p)
    r = scale_search(p, warm_starts=[hand], time_limit_s=60)
    assert hand.makespan == 22
    assert r.status is Status.OPTIMAL and r.objective == 21
    assert any(t.overlap == "F&B" for t in r.schedule.tasks)


class _SlowClock:
    """A stand-in for the ``time`` module whose monotonic clock jumps ``step`` seconds at each reading (a
    machine so loaded that every candidate seems to take that long)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now

    def __getattr__(self, name):
        import time

        return getattr(time, name)


def test_deterministic_mode_gives_the_capped_v_greedy_work_not_wall_clock(monkeypatch):
    # a V placement under the V-Half cap whose candidates do not all tie: under a wall-clock cut the
    # greedy stops after its first candidate when every reading of the clock jumps a minute; with the
    # deterministic work limit the result is the same as on an idle clock
    import schedsearch.handcrafted.v_capped as v_capped_module
    from schedsearch.placements import vshape_chunks

    problem = vshape_chunks(4, 12, forward=2, input_grad=2, weight_grad=1, memory=v_capped_module.v_half_cap(4))

    def run():
        result = scale_search(problem, rules=(), exact=False, time_limit_s=5, deterministic=True, workers=1)
        assert not validate(problem, result.schedule)
        return result.objective, result.engine, sorted((t.block, t.microbatch, t.start) for t in result.schedule.tasks)

    idle = run()
    monkeypatch.setattr(v_capped_module, "time", _SlowClock(60.0))
    assert run() == idle
    # the same slow clock does cut the wall-clock mode after the first candidate, a longer plan (so the
    # comparison above can fail)
    assert v_capped_module.v_capped(problem, None, time_limit_s=5).makespan > idle[0]


def test_capped_v_greedy_does_not_start_when_its_share_cannot_cover_one_candidate():
    # the greedy always finishes its first candidate and runs its orders: in deterministic mode (a work
    # count, whatever the load) a share below twice the task instances of work skips it with a note, and a
    # share that covers them runs it
    from schedsearch.handcrafted.v_capped import V_TASKS_PER_S
    from schedsearch.placements import vshape_chunks

    problem = vshape_chunks(4, 200)  # 4,800 task instances: one candidate and its run count 0.096 s
    tasks = len(problem.tasks)
    short = scale_search(problem, rules=(), exact=False, time_limit_s=tasks / V_TASKS_PER_S, deterministic=True,
                         workers=1)
    assert "capped_v_s" not in short.stats and short.schedule is None
    assert any(note.startswith("capped V greedy skipped") for note in short.notes)
    enough = scale_search(problem, rules=(), exact=False, time_limit_s=5 * tasks / V_TASKS_PER_S,
                          deterministic=True, workers=1)
    assert "capped_v_s" in enough.stats and not validate(problem, enough.schedule)
    assert not any(note.startswith("capped V greedy") for note in enough.notes)
