"""ttnn: `begin_trace_capture` ... `end_trace_capture` in one function."""

from __future__ import annotations

from ..base import Framework


class Ttnn(Framework):
    section = "ttnn"
    kinds = frozenset({"ttnn"})
    warm_up_advice = "call it once before `begin_trace_capture` to compile its programs"
    modules = frozenset({"ttnn"})

    def prefilter_targets(self) -> list[str]:
        # Device opens stay candidates so that a broken file that opens a device is still
        # reported (TRC001).
        return [*self.table.capture_begin, *self.table.open_device]

    def regions(self, project, function, settings):
        from .regions import find_regions  # libcst: only when asked

        return find_regions(project, function)

    def capture_begins(self):
        return self.table.capture_begin

    def capture_ends(self):
        return self.table.capture_end

    def call_effects(self, call, name, unit):
        # ttnn's names and its tensors' read methods are judged in every capture.
        from .calls import call_effects

        return call_effects(self.table, call, name, unit)

    def launches_program(self, name):
        return name not in self.table.no_device_program

    def freed(self, call, name):
        from .calls import freed  # libcst: only when asked

        return freed(self.table, call, name)

    def trace_call(self, call, name):
        from .calls import trace_call  # libcst: only when asked

        return trace_call(self.table, call, name)

    def allocates(self, call, name):
        from .calls import allocates  # libcst: only when asked

        return allocates(self.table, call, name)

    def names_with(self, effect):
        from ..effects import Effect

        return self.table.open_device if effect is Effect.OPEN_DEVICE else frozenset()
