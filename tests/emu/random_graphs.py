#!/usr/bin/env python3
"""tests/emu/random_graphs.py — random element-wise / reduction graphs for
the emulation tests (tests/CMakeLists.txt, label "emu").

The hand-written graphs in tests/emu/*.mlir pin down paths one at a time;
these exercise the partitioner's rules in combination: element-wise chains
with broadcasting, sibling groups that horizontal fusion merges, reductions
and softmax with prologues and epilogues, values used by several groups,
paths through a reduction that forbid a merge, several graph outputs. Each
graph is fixed by its seed (Python's random.Random, stable across Python 3
versions), so a failure reproduces with

    python3 tests/emu/random_graphs.py write SEED g.mlir
    build/tests/emu_check g.mlir - WORKDIR fused

and the reference is the fp64 CPU interpreter on emu_check's pseudo-random
inputs. Values stay bounded (products and exponentials only of values in
[-1, 1]) so that fp32 against fp64 stays inside emu_check's 1e-4.

    random_graphs.py write SEED OUT.mlir
    random_graphs.py write-all N DIR    (random_1.mlir .. random_N.mlir: what
                                         tests/CMakeLists.txt registers)
"""
import random
import sys

UNARY_ANY = ["relu", "abs", "neg", "sin", "cos", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh"]
BOUNDED = {"sin", "cos", "sigmoid", "tanh", "softmax"}  # results in [-1, 1]


class Graph:
    def __init__(self, rng):
        self.rng = rng
        self.rows = rng.randint(2, 70)
        self.cols = rng.choice([rng.randint(3, 40), rng.randint(41, 700)])
        self.lines = []
        self.args = []  # (name, type)
        self.vals = []  # (name, kind, bounded); kind: "full" [R, C], "row" [C], "col" [R, 1]
        self.forced = []  # fan-out siblings: graph outputs
        self.n = 0

    def ty(self, kind):
        r, c = self.rows, self.cols
        return {"full": f"tensor<{r}x{c}xf32>", "row": f"tensor<{c}xf32>",
                "col": f"tensor<{r}x1xf32>", "bool": f"tensor<{r}x{c}xi1>"}[kind]

    def fresh(self, stem):
        self.n += 1
        return f"%{stem}{self.n}"

    def emit(self, name, op, operands, otypes, rtype, attrs=""):
        a = f" {{{attrs}}}" if attrs else ""
        ops = ", ".join(operands)
        self.lines.append(f'    {name} = "kf.{op}"({ops}){a} : ({", ".join(otypes)}) -> {rtype} '
                          f'loc("{name[1:]}")')

    def pick(self, kinds=("full",), bounded=None):
        cands = [v for v in self.vals if v[1] in kinds and (bounded is None or v[2] == bounded)]
        if not cands:
            return None
        # favour recent values (chains) but reach back (siblings, reuse)
        i = len(cands) - 1 - min(int(self.rng.expovariate(0.6)), len(cands) - 1)
        return cands[i]

    def scalar(self, value):
        name = self.fresh("s")
        self.lines.append(f'    {name} = "kf.scalar"() {{value = {value!r} : f64}} : () -> f64 '
                          f'loc("{name[1:]}")')
        return name

    def step(self):
        rng = self.rng
        r = rng.random()
        x = self.pick()
        if r < 0.30:  # unary on a full value
            op = rng.choice(UNARY_ANY)
            name = self.fresh("u")
            attrs = ""
            if op == "gelu":
                attrs = 'approximate = "none"'
            elif op == "gelu_tanh":
                op, attrs = "gelu", 'approximate = "tanh"'
            self.emit(name, op, [x[0]], [self.ty("full")], self.ty("full"), attrs)
            self.vals.append((name, "full", op in BOUNDED))
        elif r < 0.38:  # exp of a bounded value
            b = self.pick(bounded=True)
            if b is None:
                return
            name = self.fresh("e")
            self.emit(name, "exp", [b[0]], [self.ty("full")], self.ty("full"))
            self.vals.append((name, "full", False))
        elif r < 0.60:  # binary, maybe broadcast, maybe scalar
            op = rng.choice(["add", "sub", "maximum", "minimum", "mul"])
            y = self.pick(kinds=("full", "row", "col"))
            if op == "mul" and not (x[2] or y[2]):
                b = self.pick(bounded=True)
                if b is None:
                    op = "add"
                else:
                    x = b
            name = self.fresh("b")
            if rng.random() < 0.2:
                s = self.scalar(rng.choice([0.5, -1.25, 2.0, 0.125]))
                self.emit(name, op, [x[0], s], [self.ty("full"), "f64"], self.ty("full"))
            else:
                self.emit(name, op, [x[0], y[0]], [self.ty("full"), self.ty(y[1])], self.ty("full"))
            self.vals.append((name, "full", op in ("maximum", "minimum") and x[2] and y[2]))
        elif r < 0.68:  # where(x > t, a, b)
            a, b = self.pick(), self.pick(kinds=("full", "col"))
            t = self.scalar(rng.choice([0.0, 0.5, -0.25]))
            c = self.fresh("c")
            self.emit(c, "gt", [x[0], t], [self.ty("full"), "f64"], self.ty("bool"))
            name = self.fresh("w")
            self.emit(name, "where", [c, a[0], b[0]], [self.ty("bool"), self.ty("full"), self.ty(b[1])],
                      self.ty("full"))
            self.vals.append((name, "full", a[2] and b[2]))
        elif r < 0.80:  # fan-out: siblings of one value, each a graph output
            for _ in range(rng.randint(2, 5)):
                op = rng.choice(UNARY_ANY)
                name = self.fresh("f")
                attrs = 'approximate = "tanh"' if op == "gelu_tanh" else (
                    'approximate = "none"' if op == "gelu" else "")
                op = "gelu" if op == "gelu_tanh" else op
                self.emit(name, op, [x[0]], [self.ty("full")], self.ty("full"), attrs)
                self.vals.append((name, "full", op in BOUNDED))
                self.forced.append(self.vals[-1])
        elif r < 0.92:  # a row reduction, kept as [R, 1] for broadcasting back
            op = rng.choice(["mean", "amax", "amin", "sum"])
            name = self.fresh("r")
            self.emit(name, op, [x[0]], [self.ty("full")], self.ty("col"),
                      "dims = array<i64: 1>, keepdim = true")
            bounded = op != "sum" and x[2]
            if op == "sum":  # sums of hundreds of values: squash before reuse
                t = self.fresh("r")
                self.emit(t, "tanh", [name], [self.ty("col")], self.ty("col"))
                name, bounded = t, True
            self.vals.append((name, "col", bounded))
        else:  # softmax over the row
            name = self.fresh("m")
            self.emit(name, "softmax", [x[0]], [self.ty("full")], self.ty("full"), "dim = 1 : i64")
            self.vals.append((name, "full", True))

    def build(self):
        rng = self.rng
        self.args.append(("%x", self.ty("full")))
        self.vals.append(("%x", "full", False))
        if rng.random() < 0.7:
            self.args.append(("%y", self.ty("full")))
            self.vals.append(("%y", "full", False))
        if rng.random() < 0.6:
            self.args.append(("%bias", self.ty("row")))
            self.vals.append(("%bias", "row", False))
        if rng.random() < 0.4:
            self.args.append(("%scale", self.ty("col")))
            self.vals.append(("%scale", "col", False))
        for _ in range(rng.randint(6, 22)):
            self.step()
        made = [v for v in self.vals if not v[0].startswith(("%x", "%y", "%bias", "%scale"))]
        outs = [made[-1]] if made else [self.vals[0]]
        for v in made[:-1]:
            if v not in outs and (v in self.forced or (rng.random() < 0.3 and len(outs) < 6)):
                outs.append(v)
        return outs

    def text(self, seed):
        outs = self.build()
        types = ", ".join(a[1] for a in self.args)
        attrs = ", ".join(f'{{kf.name = "{a[0][1:]}"}}' for a in self.args)
        sig = f"{', '.join(f'{a[0]}: {a[1]}' for a in self.args)}"
        otypes = ", ".join(self.ty(v[1]) for v in outs)
        onames = ", ".join(v[0] for v in outs)
        head = [
            f"// random graph {seed} (tests/emu/random_graphs.py): "
            f"{self.rows}x{self.cols}, {len(self.lines)} ops, {len(outs)} outputs",
            '"builtin.module"() ({',
            f'  "func.func"() <{{arg_attrs = [{attrs}], function_type = ({types}) -> ({otypes}), '
            f'sym_name = "random_{seed}"}}> ({{',
            f"  ^bb0({sig}):",
        ]
        tail = [f'    "func.return"({onames}) : ({otypes}) -> ()', "  }) : () -> ()", "}) : () -> ()"]
        return "\n".join(head + self.lines + tail) + "\n"


def main(argv):
    if len(argv) == 4 and argv[1] == "write":
        seed = int(argv[2])
        with open(argv[3], "w") as f:
            f.write(Graph(random.Random(seed)).text(seed))
        return 0
    if len(argv) == 4 and argv[1] == "write-all":
        for seed in range(1, int(argv[2]) + 1):
            path = f"{argv[3]}/random_{seed}.mlir"
            text = Graph(random.Random(seed)).text(seed)
            try:
                with open(path) as f:
                    if f.read() == text:
                        continue  # unchanged: keep its time stamp
            except OSError:
                pass
            with open(path, "w") as f:
                f.write(text)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
