"""What an unannotated constructor parameter holds: the classes every construction in the
project passes for it, or unknown (no target) when any construction cannot be told."""

from __future__ import annotations

from .test_semantic_model import make_project, targets

GENERATOR = """
    class Generator:
        def __init__(self, model, device=None):
            self.model = model

        def decode(self, x):
            return self.model.forward(x)
"""

MODELS = """
    class Transformer:
        def forward(self, x):
            return x


    class Decoder:
        def forward(self, x):
            return x


    def load(path):
        return Decoder()
"""


def decode_targets(tmp_path, demo: str, extra: dict[str, str] | None = None) -> set[str]:
    files = {"generator.py": GENERATOR, "models.py": MODELS, "demo.py": demo, **(extra or {})}
    return targets(make_project(tmp_path, files), "generator.py", "Generator.decode", "self.model.forward(x)")


IMPORTS = "from generator import Generator\nfrom models import Decoder, Transformer, load\n"


def test_the_union_over_every_construction(tmp_path):
    demo = IMPORTS + """
def one(device):
    return Generator(Transformer(), device)


def two():
    model = Decoder()
    return Generator(model=model)
"""
    assert decode_targets(tmp_path, demo) == {"models.Transformer.forward", "models.Decoder.forward"}


def test_one_construction_passing_an_unknown_value_makes_it_unknown(tmp_path):
    demo = IMPORTS + """
def one(device):
    return Generator(Transformer(), device)
"""
    assert decode_targets(tmp_path, demo) == {"models.Transformer.forward"}
    unknown = demo + "\n\ndef two(path):\n    return Generator(load(path))\n"
    assert decode_targets(tmp_path / "unknown", unknown) == set()
    assert decode_targets(tmp_path / "none", IMPORTS) == set()  # never constructed


def test_a_construction_at_module_level_or_from_star_args_is_unknown(tmp_path):
    known = IMPORTS + "\n\ndef one():\n    return Generator(Transformer())\n"
    assert decode_targets(tmp_path, known) == {"models.Transformer.forward"}
    assert decode_targets(tmp_path / "module", known + "\n\ngenerator = Generator(Transformer())\n") == set()
    assert decode_targets(tmp_path / "spread", known + "\n\ndef spread(args):\n    return Generator(*args)\n") == set()


def test_a_construction_with_the_class_imported_in_the_function(tmp_path):
    known = IMPORTS + "\n\ndef one():\n    return Generator(Transformer())\n"
    local = "\n\ndef two(path):\n    from generator import Generator\n    from models import Decoder\n\n    return Generator(Decoder())\n"
    assert decode_targets(tmp_path, known + local) == {"models.Transformer.forward", "models.Decoder.forward"}
    unknown = local.replace("Generator(Decoder())", "Generator(load(path))")
    assert decode_targets(tmp_path / "unknown", known + unknown) == set()


def test_the_class_named_other_than_as_a_call_is_unknown(tmp_path):
    known = IMPORTS + "\n\ndef one():\n    return Generator(Transformer())\n"
    # A class test, an annotation or an attribute of the class makes no instance unseen.
    harmless = known + "\n\ndef check(g: Generator):\n    return isinstance(g, (Generator, int)) and Generator.decode\n"
    assert decode_targets(tmp_path, harmless) == {"models.Transformer.forward"}
    aliased = known + "\n\ndef factory():\n    make = Generator\n    return make(load('p'))\n"
    assert decode_targets(tmp_path / "aliased", aliased) == set()


def test_subclass_constructions_and_super_init_count(tmp_path):
    subclasses = """
from generator import Generator
from models import Decoder, load


class Inherited(Generator):
    pass


class Forwarding(Generator):
    def __init__(self, model):
        super().__init__(model)


def build():
    return Inherited(Decoder())


def build_forwarding(path):
    return Forwarding(load(path))
"""
    demo = IMPORTS + "\n\ndef one():\n    return Generator(Transformer())\n"
    # `Forwarding(load(path))` hands an unknown model on through `super().__init__`.
    assert decode_targets(tmp_path, demo, {"sub.py": subclasses}) == set()
    known = subclasses.replace("Forwarding(load(path))", "Forwarding(Decoder())")
    assert decode_targets(tmp_path / "known", demo, {"sub.py": known}) == {"models.Transformer.forward", "models.Decoder.forward"}
    # A subclass that inherits `__init__` constructs through it: its argument counts too.
    unknown_inherited = known.replace("Inherited(Decoder())", "Inherited(load('p'))")
    assert decode_targets(tmp_path / "inherited", demo, {"sub.py": unknown_inherited}) == set()


def test_a_list_of_models_indexed(tmp_path):
    files = {
        "generator.py": """
            class Generator:
                def __init__(self, model):
                    self.model = model

                def decode(self, i, x):
                    return self.model[i].forward(x)
        """,
        "models.py": MODELS,
        "demo.py": IMPORTS + "\n\ndef one(n):\n    models = [Transformer() for _ in range(n)]\n    return Generator(models)\n\n\ndef two():\n    return Generator([Decoder()])\n",
    }
    project = make_project(tmp_path, files)
    assert targets(project, "generator.py", "Generator.decode", "self.model[i].forward(x)") == {"models.Transformer.forward", "models.Decoder.forward"}


def test_a_cycle_of_constructions_is_unknown_whichever_is_asked_first(tmp_path):
    # `A(model)` builds `B(model)`, which builds `A(model)`: nothing outside says what it is,
    # whichever is asked first; `C`, handed the same model from outside, is known.
    files = {
        "models.py": MODELS,
        "outside.py": """
            from models import Transformer


            class C:
                def __init__(self, model):
                    self.model = model

                def run(self, x):
                    return self.model.forward(x)


            def build():
                return C(Transformer())
        """,
        "cycle.py": """
            class A:
                def __init__(self, model):
                    self.model = model
                    self.b = B(model)

                def run(self, x):
                    return self.model.forward(x)


            class B:
                def __init__(self, model):
                    self.model = model
                    self.a = A(model)

                def run(self, x):
                    return self.model.forward(x)
        """,
    }
    for first, second in (("A", "B"), ("B", "A")):
        project = make_project(tmp_path / first, files)
        assert targets(project, "outside.py", "C.run", "self.model.forward(x)") == {"models.Transformer.forward"}
        assert targets(project, "cycle.py", f"{first}.run", "self.model.forward(x)") == set()
        assert targets(project, "cycle.py", f"{second}.run", "self.model.forward(x)") == set()


RUNNER = """
    class Runner:
        def __init__(self):
            self.model = None

        def attach(self, model):
            self.model = model

        def decode(self, x):
            return self.model.forward(x)
"""


def attach_targets(tmp_path, demo: str) -> set[str]:
    project = make_project(tmp_path, {"runner.py": RUNNER, "models.py": MODELS, "demo.py": demo})
    return targets(project, "runner.py", "Runner.decode", "self.model.forward(x)")


def test_a_method_storing_its_parameter_from_every_call_of_it(tmp_path):
    demo = "from runner import Runner\nfrom models import Transformer, load\n\n\ndef one():\n    runner = Runner()\n    runner.attach(Transformer())\n    return runner\n"
    assert attach_targets(tmp_path, demo) == {"models.Transformer.forward"}
    # A call of the name on a receiver of unknown class may be this method's.
    unknown_receiver = demo + "\n\ndef two(something):\n    something.attach(load('p'))\n"
    assert attach_targets(tmp_path / "receiver", unknown_receiver) == set()
    # The bound method passed on: calls through it are not found.
    passed_on = demo + "\n\ndef three(register):\n    runner = Runner()\n    register(runner.attach)\n"
    assert attach_targets(tmp_path / "passed", passed_on) == set()
