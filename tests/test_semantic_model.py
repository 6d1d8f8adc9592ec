"""The semantic model, pyflakes-style: a snippet (or a few files), and the binding, module
name or call target expected."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from trace_lint import frameworks
from trace_lint.semantic.calls import CallResolver
from trace_lint.semantic.module_names import module_names, source_roots
from trace_lint.semantic.project import FunctionInfo, ModuleInfo, Project


def make_project(tmp_path: Path, files: dict[str, str], roots=None) -> Project:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    all_roots = source_roots(roots or (), tmp_path, ())
    modules = []
    for relative in files:
        path = (tmp_path / relative).resolve()
        modules.append(ModuleInfo(path, module_names(path, all_roots), relative))
    return Project(modules, frameworks.module_names())  # the stand-ins, as the engine hands them in


def module_of(project: Project, display: str) -> ModuleInfo:
    return next(m for m in project.modules if m.display_path == display)


def function(project: Project, display: str, qualname: str) -> FunctionInfo:
    module = module_of(project, display)
    module.load()
    found = module.functions.get(qualname)
    if found is None:
        list(module.iter_functions())
        found = module.functions[qualname]
    return found


def call_in(fn: FunctionInfo, text: str) -> cst.Call:
    for node in fn.nodes:
        if isinstance(node, cst.Call) and fn.module.code(node) == text:
            return node
    raise AssertionError(f"no call {text!r} in {fn.qualname}")


def targets(project: Project, display: str, qualname: str, call_text: str) -> set[str]:
    resolver = CallResolver(project)
    fn = function(project, display, qualname)
    return {t.function.full_name for t in resolver.resolve_all(call_in(fn, call_text), fn)}


# -- module names -------------------------------------------------------------------------
def test_namespace_packages_with_repeated_file_names(tmp_path):
    project = make_project(
        tmp_path,
        {
            "models/demos/a/tt/model.py": """
                from models.demos.a.tt.layers import Block
                def run(x):
                    return Block()(x)
            """,
            "models/demos/a/tt/layers.py": """
                class Block:
                    def __call__(self, x):
                        return x
            """,
            "models/demos/b/tt/layers.py": """
                class Block:
                    def __call__(self, x):
                        return x + 1
            """,
        },
    )
    assert module_of(project, "models/demos/a/tt/layers.py").name == "models.demos.a.tt.layers"
    assert targets(project, "models/demos/a/tt/model.py", "run", "Block()(x)") == {"models.demos.a.tt.layers.Block.__call__"}
    fn = function(project, "models/demos/a/tt/model.py", "run")
    assert project.qualified_name(call_in(fn, "Block()").func, fn.module, fn) == "models.demos.a.tt.layers.Block"
    assert project.lookup("models.demos.a.tt.layers.Block").module.display_path == "models/demos/a/tt/layers.py"
    # A file stem alone never names a module.
    assert project.module("layers") is None


def test_relative_imports_in_namespace_packages(tmp_path):
    project = make_project(
        tmp_path,
        {
            "pkg/sub/a.py": """
                from .b import helper
                from ..c import other
                def run(x):
                    helper(x)
                    other(x)
            """,
            "pkg/sub/b.py": "def helper(x):\n    return x\n",
            "pkg/c.py": "def other(x):\n    return x\n",
        },
    )
    assert targets(project, "pkg/sub/a.py", "run", "helper(x)") == {"pkg.sub.b.helper"}
    assert targets(project, "pkg/sub/a.py", "run", "other(x)") == {"pkg.c.other"}


def test_configured_source_root_names_modules_from_it(tmp_path):
    files = {"src/lib/core.py": "def f():\n    pass\n", "src/app.py": "from lib.core import f\ndef run():\n    f()\n"}
    project = make_project(tmp_path, files, roots=[tmp_path / "src"])
    assert module_of(project, "src/lib/core.py").names[0] == "lib.core"
    assert "src.lib.core" in module_of(project, "src/lib/core.py").names
    assert targets(project, "src/app.py", "run", "f()") == {"lib.core.f"}


def test_package_init_names_the_package(tmp_path):
    project = make_project(tmp_path, {"pkg/__init__.py": "from .impl import f\n", "pkg/impl.py": "def f():\n    pass\n", "use.py": "import pkg\ndef run():\n    pkg.f()\n"})
    assert module_of(project, "pkg/__init__.py").name == "pkg"
    assert targets(project, "use.py", "run", "pkg.f()") == {"pkg.impl.f"}


# -- scopes and bindings ------------------------------------------------------------------
def test_module_level_rebinding_of_an_import_shadows_it(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        import ttnn
        import torch as tt
        ttnn = make_wrapper(ttnn)
        def f(x):
            ttnn.to_torch(x)
            tt.zeros(1)
    """})
    fn = function(project, "m.py", "f")
    # A variable named `ttnn` stands for the module (RULES: tt-check passes it in) ...
    assert project.qualified_name(call_in(fn, "ttnn.to_torch(x)").func, fn.module, fn) == "ttnn.to_torch"
    assert project.qualified_name(call_in(fn, "tt.zeros(1)").func, fn.module, fn) == "torch.zeros"
    # ... but any other imported name rebound at module level is no longer the import.
    project2 = make_project(tmp_path / "two", {"m.py": """
        import ttnn as tn
        tn = something_else()
        def f(x):
            tn.to_torch(x)
    """})
    fn2 = function(project2, "m.py", "f")
    assert project2.qualified_name(call_in(fn2, "tn.to_torch(x)").func, fn2.module, fn2) is None


def test_import_fallback_to_none_keeps_the_import(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        try:
            import ttnn as tn
        except ImportError:
            tn = None
        def f(x):
            tn.to_torch(x)
    """})
    fn = function(project, "m.py", "f")
    assert project.qualified_name(call_in(fn, "tn.to_torch(x)").func, fn.module, fn) == "ttnn.to_torch"


def test_class_body_import_does_not_leak_into_module_scope(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        import ttnn as t

        class Holder:
            import numpy as t

        def f(x):
            t.to_torch(x)
    """})
    fn = function(project, "m.py", "f")
    assert project.qualified_name(call_in(fn, "t.to_torch(x)").func, fn.module, fn) == "ttnn.to_torch"


def test_function_local_import_and_later_rebinding(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        def f(x):
            import ttnn as tn
            tn.to_torch(x)
            tn = other()
            tn.to_torch(x)
    """})
    fn = function(project, "m.py", "f")
    first, second = [n for n in fn.nodes if isinstance(n, cst.Call) and fn.module.code(n) == "tn.to_torch(x)"]
    assert project.qualified_name(first.func, fn.module, fn) == "ttnn.to_torch"
    assert project.qualified_name(second.func, fn.module, fn) is None


def test_reaching_definitions_branches_loops_and_returns(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        def f(flag, items):
            v = 1
            if flag:
                v = 2
            else:
                return v
            for item in items:
                use(v)
                v = 3
            use(v)
    """})
    fn = function(project, "m.py", "f")
    calls = [n for n in fn.nodes if isinstance(n, cst.Call) and fn.module.code(n) == "use(v)"]
    in_loop, after = calls
    values = lambda call: sorted(fn.module.code(b.value) for b in fn.bindings.reaching("v", call))
    assert values(in_loop) == ["2", "3"]
    assert values(after) == ["2", "3"]
    ret = next(n for n in fn.nodes if isinstance(n, cst.Return))
    assert sorted(fn.module.code(b.value) for b in fn.bindings.reaching("v", ret)) == ["1"]


def test_walrus_binds_in_the_function_scope(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        def f(read):
            v = 0
            if (v := read()) is not None:
                use(v)
            return [w for x in read() if (w := x)]
    """})
    fn = function(project, "m.py", "f")
    call = next(n for n in fn.nodes if isinstance(n, cst.Call) and fn.module.code(n) == "use(v)")
    assert [b.kind for b in fn.bindings.reaching("v", call)] == ["walrus"]
    assert fn.bindings.binds("w")  # a comprehension's `:=` binds in the enclosing function


# -- calls --------------------------------------------------------------------------------
def test_base_call_dispatches_forward_to_the_subclass(tmp_path):
    project = make_project(tmp_path, {
        "base.py": """
            class LightweightModule:
                def __call__(self, *args, **kwargs):
                    return self.forward(*args, **kwargs)
        """,
        "model.py": """
            from base import LightweightModule
            class Decoder(LightweightModule):
                def forward(self, x):
                    return x
            class Other(LightweightModule):
                def forward(self, x):
                    return x
            def run(x):
                decoder = Decoder()
                decoder(x)
        """,
    })
    resolver = CallResolver(project)
    run = function(project, "model.py", "run")
    (target,) = resolver.resolve_all(call_in(run, "decoder(x)"), run)
    assert target.function.full_name == "base.LightweightModule.__call__"
    assert target.self_class.full_name == "model.Decoder"
    base_call = target.function
    inner = call_in(base_call, "self.forward(*args, **kwargs)")
    assert [t.function.full_name for t in resolver.resolve_all(inner, base_call, target.self_class)] == ["model.Decoder.forward"]
    # Without a known instance class, the base has no forward: unknown.
    assert resolver.resolve_all(inner, base_call) == []


def test_local_callable_bound_on_several_branches_follows_each(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        import functools
        def a(x): return x
        def b(x): return x
        def c(x, k): return x
        def run(x, mode):
            if mode == 1:
                def step(v): return a(v)
            elif mode == 2:
                step = lambda v: b(v)
            else:
                step = functools.partial(c, k=1)
            step(x)
    """})
    found = targets(project, "m.py", "run", "step(x)")
    assert "m.c" in found and "m.run.<locals>.step" in found and "m.run.<locals>.<lambda>" in found
    assert len(found) == 3


def test_only_bindings_that_reach_the_call_are_followed(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        def a(x): return x
        def b(x): return x
        def run(x):
            f = a
            f(x)
            f = b
    """})
    assert targets(project, "m.py", "run", "f(x)") == {"m.a"}


def test_list_and_dict_element_receivers(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        class Layer:
            def decode(self, x): return x
            def forward(self, x): return x
        class Head:
            def __call__(self, x): return x
        class Model:
            def __init__(self, n):
                self.layers = [Layer() for _ in range(n)]
                self.heads = {"a": Head()}
                self.extra = []
                self.extra.append(Head())
            def run(self, x, i):
                self.layers[i].decode(x)
                for layer in self.layers:
                    layer(x)
                self.heads["a"](x)
                for head in self.heads.values():
                    head(x)
                self.extra[0](x)
    """})
    assert targets(project, "m.py", "Model.run", "self.layers[i].decode(x)") == {"m.Layer.decode"}
    assert targets(project, "m.py", "Model.run", "layer(x)") == {"m.Layer.forward"}
    assert targets(project, "m.py", "Model.run", 'self.heads["a"](x)') == {"m.Head.__call__"}
    assert targets(project, "m.py", "Model.run", "head(x)") == {"m.Head.__call__"}
    assert targets(project, "m.py", "Model.run", "self.extra[0](x)") == {"m.Head.__call__"}


def test_parameter_annotations_and_attribute_chains(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        from typing import Optional
        class Worker:
            def step(self, x): return x
        class Engine:
            def __init__(self, w: Worker, backup: "Optional[Worker]" = None):
                self.w = w
            def run(self, x, other: Worker | None):
                self.w.step(x)
                other.step(x)
        def make() -> Engine:
            return Engine(Worker())
        def go(x):
            e = make()
            e.w.step(x)
    """})
    assert targets(project, "m.py", "Engine.run", "self.w.step(x)") == {"m.Worker.step"}
    assert targets(project, "m.py", "Engine.run", "other.step(x)") == {"m.Worker.step"}
    assert targets(project, "m.py", "go", "e.w.step(x)") == {"m.Worker.step"}


def test_tensor_method_sharing_a_project_method_name_is_a_library_call(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        import ttnn
        class Pool:
            def deallocate(self, force=False):
                self.count += 1
        def run(x):
            t = ttnn.relu(x)
            t.deallocate()
            x.deallocate(True)
    """})
    assert targets(project, "m.py", "run", "t.deallocate()") == set()
    assert targets(project, "m.py", "run", "x.deallocate(True)") == set()


def test_super_follows_the_mro_of_the_instance(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        class A:
            def f(self): return 1
        class B(A):
            def f(self): return super().f()
        class C(A):
            def f(self): return 3
        class D(B, C):
            pass
        def run():
            D().f()
    """})
    resolver = CallResolver(project)
    run = function(project, "m.py", "run")
    (target,) = resolver.resolve_all(call_in(run, "D().f()"), run)
    assert target.function.full_name == "m.B.f"
    inner = call_in(target.function, "super().f()")
    # D's MRO is D, B, C, A: super() in B.f on a D instance is C.f.
    assert [t.function.full_name for t in resolver.resolve_all(inner, target.function, target.self_class)] == ["m.C.f"]


def test_summaries_are_a_fixed_point_whatever_is_asked_first():
    from itertools import permutations

    from trace_lint.semantic.summaries import FixedPoint

    # a -> b -> a (recursion), b -> c, c -> c (self-recursion), d -> a.
    graph = {"a": ["b"], "b": ["c", "a"], "c": ["c"], "d": ["a"]}
    own = {"a": {1}, "b": {2}, "c": {3}, "d": {4}}
    expected = {"a": {1, 2, 3}, "b": {1, 2, 3}, "c": {3}, "d": {1, 2, 3, 4}}
    for order in permutations(graph):
        solver = None

        def compute(key):
            out = set(own[key])
            for callee in graph[key]:
                out |= solver.get(callee, callee)
            return frozenset(out)

        solver = FixedPoint(compute, frozenset())
        assert {key: set(solver.get(key, key)) for key in order} == expected, order
        assert not solver.busy


def test_a_package_reexporting_its_submodules_namesake_resolves_without_end(tmp_path):
    # triton's `runtime/__init__.py` does `from .driver import driver`: `runtime.driver.x`
    # re-expands to `runtime.driver.driver.x` on every hop; the lookup must end (it recursed
    # until Python's limit, which the engine reported as "code nested too deeply").
    project = make_project(
        tmp_path,
        {
            "runtime/__init__.py": "from .driver import driver\n",
            "runtime/driver.py": """
                class DriverConfig:
                    def clear(self):
                        pass

                driver = DriverConfig()
            """,
            "bench.py": """
                from runtime import driver as d
                from runtime.driver import DriverConfig
            """,
        },
    )
    assert project.lookup("runtime.driver.active.clear_cache") is None
    assert project.lookup("runtime.driver.DriverConfig.clear").qualname == "DriverConfig.clear"
    assert project.lookup("bench.DriverConfig").qualname == "DriverConfig"


def test_a_local_list_of_callables_runs_its_elements(tmp_path):
    project = make_project(tmp_path, {"m.py": """
        class S:
            def a(self, x): return x
            def b(self, x): return x
            def run(self, x, extra, n):
                fns = [self.a, self.b]
                fns[n](x)
                for i, f in enumerate(reversed(fns[1:])):
                    f(x)
                _ = [g(x) for g, y in zip(fns, [x, x])]
                for k in reversed(fns):
                    k(x)
                for m in fns:
                    m(x)
                    if n:
                        break
                more = [self.a]
                more.append(extra)
                for h in more:
                    h(x)
    """})
    resolver = CallResolver(project)
    run = function(project, "m.py", "S.run")
    for text in ("fns[n](x)", "f(x)", "g(x)"):
        call = call_in(run, text)
        assert {t.function.full_name for t in resolver.resolve_all(call, run)} == {"m.S.a", "m.S.b"}, text
        assert not resolver.runs_unknown_element(call, run), text
    assert {t.function.full_name for t in resolver.every_element_runs(call_in(run, "k(x)"), run)} == {"m.S.a", "m.S.b"}
    assert resolver.every_element_runs(call_in(run, "f(x)"), run) is None  # a slice: some of them
    assert resolver.every_element_runs(call_in(run, "g(x)"), run) is None  # zip stops at the shortest
    assert resolver.every_element_runs(call_in(run, "m(x)"), run) is None  # a loop that may break
    assert resolver.every_element_runs(call_in(run, "fns[n](x)"), run) is None  # one element, by index
    # Appended to: the known element still resolves, but the list may hold anything.
    unknown = call_in(run, "h(x)")
    assert [t.function.full_name for t in resolver.resolve_all(unknown, run)] == ["m.S.a"]
    assert resolver.runs_unknown_element(unknown, run) and resolver.every_element_runs(unknown, run) is None
