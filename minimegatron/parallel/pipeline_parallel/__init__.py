"""Pipeline parallelism: schedules as data, the stage split, the executor, recomputation."""
