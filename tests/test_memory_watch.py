"""The judge's "still alive" count waits out what the hang watchdog holds a moment.

The watchdog (runtime/faults.py) reads the main thread's frame every tick; a frame that
has just returned keeps its locals alive while it reads. A handle the student's code keeps
must count; one only that thread held must not (a right answer failed in CI this way).
"""
import threading
import time
import weakref

from minimegatron.classroom.exercise_checks.memory_watch import alive, alive_after_pauses


class Thing:
    pass


def held_by_a_thread_for(seconds):
    """A weak reference to an object only another thread holds, for ``seconds``."""
    thing, ready = Thing(), threading.Event()
    ref = weakref.ref(thing)

    def hold(obj=thing):
        ready.set()
        time.sleep(seconds)
        del obj

    threading.Thread(target=hold, daemon=True).start()
    ready.wait()
    del thing
    return ref


def test_an_object_a_thread_held_a_moment_is_not_kept():
    ref = held_by_a_thread_for(0.1)
    assert alive([ref]) == 1                      # what the old check counted
    assert alive_after_pauses([ref]) == 0


def test_an_object_kept_stays_counted():
    kept = Thing()
    assert alive_after_pauses([weakref.ref(kept), weakref.ref(Thing())]) == 1


def test_a_reference_cycle_is_collected_not_counted():
    a, b = Thing(), Thing()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    del a, b
    assert alive_after_pauses([ref]) == 0
