"""Python's own calls and its standard libraries' (the [python] table section) that have an
effect in any capture: printing or formatting a device tensor reads it; `random`, `numpy.random`
draw on the host; `time.time` reads the clock. Not a framework: it finds no captures, and is asked
beside every framework in `FRAMEWORKS`."""

from __future__ import annotations

from .base import Framework
from .effects import CallEffect, Effect


class Python(Framework):
    section = "python"

    def call_effects(self, call, name, unit):
        if name is None:
            return ()
        table = self.table
        if name in table.formatting and any(unit.is_device_value(a.value) for a in call.args):
            return (CallEffect(Effect.READ, f"`{name}()` of a device tensor"),)
        if any(name.startswith(prefix + ".") for prefix in table.random):
            return (CallEffect(Effect.HOST_RANDOM, f"the random draw `{name}`"),)
        if name in table.clock:
            return (CallEffect(Effect.CLOCK, f"the wall-clock read `{name}`"),)
        return ()
