"""The cost model's names where their callers have always imported them; the model itself is the package
checks/cost/, one module per mechanism (cost/launch.py says how a launch's time is put together)."""
from __future__ import annotations

from .cost.dots import DOT_EFF, RATE_KEY, pipeline_overlap  # noqa: F401
from .cost.estimate import estimate  # noqa: F401
from .cost.findings import (CAUSES, gain_of, launch_costs, mean_launch_us, tail_branch_lines,  # noqa: F401
                            weigh)
from .cost.kernel import KernelFacts, kernel_class  # noqa: F401
from .cost.latency import LATENCY_US, PIPE_LATENCY_US, PROGRAM_US, WARP_ISSUE_BPS  # noqa: F401
from .cost.launch import CALIBRATED, DISAGREE, LAUNCH_US, Cost  # noqa: F401
from .cost.memory import EFF_NARROW, EFF_SECTOR, EFF_WIDE, L2_BW, L2_FIT  # noqa: F401
from .cost.tensors import tensor_bytes  # noqa: F401
from .cost.trips import kernel_loops, loop_trips  # noqa: F401
