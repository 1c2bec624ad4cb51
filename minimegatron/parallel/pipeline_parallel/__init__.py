"""Pipeline parallelism: schedules as data, the stage split, the executor, recomputation."""
# schedules first: it registers zero_bubble's schedules, which build on its helpers
from minimegatron.parallel.pipeline_parallel.schedules import (SCHEDULES, get_schedule,  # noqa
                                                               simulate)
