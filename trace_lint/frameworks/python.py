"""Python's own calls (the [python] table section) that have an effect in any capture: printing
or formatting a device tensor reads it. Not a framework: it finds no captures, and is asked
beside every framework in `FRAMEWORKS`."""

from __future__ import annotations

from .base import Framework
from .effects import CallEffect, Effect


class Python(Framework):
    section = "python"

    def call_effects(self, call, name, unit):
        if name is not None and name in self.table.formatting and any(unit.is_device_value(a.value) for a in call.args):
            return (CallEffect(Effect.READ, f"`{name}()` of a device tensor"),)
        return ()
