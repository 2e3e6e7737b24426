"""Miniature code: transform an integer read from stdin by a chain of worded ops, print it.

Prompt ``Read x. Double it, add 3, then square it. Print it.``; tier = number of ops (1..4). A reliable program
has one statement per op (``x=int(input())\\nx=x*2\\nx=x+3\\nx=x*x\\nprint(x)``); the unreliable one-liner
drops needed parentheses (``print(x*2+3**2)``). Tests are stdin/stdout pairs computed from the op list in pure
Python; teacher programs are judged by a restricted AST interpreter (no ``exec`` of generated code here).
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import json
import random

from klear_lib.data.schema import make_rl_row
from klear_lib.rewards.code import extract_program  # the judge's extraction, so teachers are graded as policies

TIERS = (1, 2, 3, 4)
DATA_SOURCE = "tiny_code"

# name -> (phrase, statement, one-liner, precedence its operand needs in a one-liner, precedence of the one-liner
# result, constant range, the op in pure Python)
OPS = {
    "add": ("add {c}", "x=x+{c}", "{e}+{c}", 1, 1, (1, 9), lambda x, c: x + c),
    "sub": ("subtract {c}", "x=x-{c}", "{e}-{c}", 1, 1, (1, 9), lambda x, c: x - c),
    "mul": ("multiply by {c}", "x=x*{c}", "{e}*{c}", 2, 2, (3, 9), lambda x, c: x * c),
    "double": ("double it", "x=x*2", "{e}*2", 2, 2, None, lambda x, c: x * 2),
    "square": ("square it", "x=x*x", "{e}**2", 6, 5, None, lambda x, c: x * x),
    "neg": ("negate it", "x=-x", "-{e}", 3, 3, None, lambda x, c: -x),
    "abs": ("take abs", "x=abs(x)", "abs({e})", 0, 6, None, lambda x, c: abs(x)),
    "max": ("take max with {c}", "x=max(x,{c})", "max({e},{c})", 0, 6, (-5, 9), max),
    "min": ("take min with {c}", "x=min(x,{c})", "min({e},{c})", 0, 6, (-5, 9), min),
    "mod": ("take mod {c}", "x=x%{c}", "{e}%{c}", 2, 2, (2, 9), lambda x, c: x % c),
    "div": ("floor-divide by {c}", "x=x//{c}", "{e}//{c}", 2, 2, (2, 5), lambda x, c: x // c),  # floor division
}


@dataclasses.dataclass(frozen=True)
class CodeItem:
    """A code problem: ``ops`` ((name, constant or None), ...) and the stdin inputs of its tests."""

    ops: tuple[tuple[str, int | None], ...]
    inputs: tuple[int, ...]

    @property
    def tier(self) -> int:
        return len(self.ops)

    @property
    def prompt(self) -> str:
        """``Read x. Double it, add 3, then square it. Print it.``"""
        words = [OPS[n][0].format(c=c) for n, c in self.ops]
        body = words[0] if len(words) == 1 else ", ".join(words[:-1]) + ", then " + words[-1]
        return f"Read x. {body[0].upper()}{body[1:]}. Print it."

    def outputs(self) -> list[int]:
        return [run_ops(self.ops, x) for x in self.inputs]


def apply_op(name: str, c: int | None, x: int) -> int:
    return OPS[name][6](x, c)


def run_ops(ops, x: int) -> int:
    return functools.reduce(lambda v, op: apply_op(*op, v), ops, x)


def sample_item(rng: random.Random, tier: int, n_tests: int = 16) -> CodeItem:
    """A random problem: ``tier`` distinct-in-a-row ops, at most one ``square``, and ``n_tests`` distinct inputs in
    -20..20."""
    ops: list[tuple[str, int | None]] = []
    names = sorted(OPS)
    while len(ops) < tier:
        name = rng.choice(names)
        if (ops and ops[-1][0] == name) or (name == "square" and any(n == "square" for n, _ in ops)):
            continue
        lo_hi = OPS[name][5]
        ops.append((name, rng.randint(*lo_hi) if lo_hi else None))
    return CodeItem(tuple(ops), tuple(rng.sample(range(-20, 21), n_tests)))


def ground_truth(inputs, outputs) -> str:
    """The JSON test string ``{"inputs": ["3\\n", ...], "outputs": ["81\\n", ...]}``."""
    return json.dumps({"inputs": [f"{x}\n" for x in inputs], "outputs": [f"{y}\n" for y in outputs]})


def to_row(item: CodeItem, split: str, *, outputs: list[int] | None = None, inputs=None,
           noise: str | None = None) -> dict:
    """The verl-schema row; ``inputs``/``outputs`` override the true tests (injected test noise)."""
    ins = list(item.inputs if inputs is None else inputs)
    outs = [run_ops(item.ops, x) for x in ins] if outputs is None else outputs
    extra = {"noise": noise, "ops": [[n, c] for n, c in item.ops], "true_inputs": list(item.inputs)}
    return make_rl_row(item.prompt, ground_truth(ins, outs), ability="code", data_source=DATA_SOURCE,
                       split=split, tier=item.tier, extra=extra)


def item_from_row(row: dict) -> CodeItem:
    info = row["extra_info"]
    return CodeItem(tuple((n, c) for n, c in info["ops"]), tuple(info["true_inputs"]))


def stepwise_program(ops) -> str:
    body = [OPS[n][1].format(c=c) for n, c in ops]
    return "\n".join(["x=int(input())", *body, "print(x)"])


def oneliner(ops, drop_parens=lambda: False) -> str:
    """One expression; at each place parentheses are needed, ``drop_parens()`` may omit them (the bug)."""
    expr, level = "x", 6
    for name, c in ops:
        e = f"({expr})" if level < OPS[name][3] and not drop_parens() else expr
        expr = "x*x" if name == "square" and e == "x" else OPS[name][2].format(e=e, c=c)
        level = OPS[name][4]
    return f"x=int(input())\nprint({expr})"


_BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


def _eval(node, env: dict, stdin: int) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return _BIN[type(node.op)](_eval(node.left, env, stdin), _eval(node.right, env, stdin))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _eval(node.right, env, stdin) in (2, 3):
        return _eval(node.left, env, stdin) ** _eval(node.right, env, stdin)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, env, stdin)
        return -v if isinstance(node.op, ast.USub) else v
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise ValueError(f"unsupported expression {ast.dump(node)[:60]}")
    name, args = node.func.id, node.args
    reads_stdin = len(args) == 1 and isinstance(args[0], ast.Call) and getattr(args[0].func, "id", "") == "input"
    if name == "int" and reads_stdin:
        return stdin
    vals = [_eval(a, env, stdin) for a in args]
    if (name, len(vals)) in (("abs", 1), ("max", 2), ("min", 2)):
        return {"abs": abs, "max": max, "min": min}[name](*vals)
    raise ValueError(f"unsupported call {name}")


def interpret(program: str, stdin: int) -> str | None:
    """Run a miniature program on one integer input with a restricted AST interpreter; None on any error."""
    try:
        env: dict[str, int] = {}
        out = []
        for stmt in ast.parse(program).body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = _eval(stmt.value, env, stdin)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                    getattr(stmt.value.func, "id", "") == "print" and len(stmt.value.args) == 1:
                out.append(str(_eval(stmt.value.args[0], env, stdin)))
            else:
                raise ValueError("unsupported statement")
        return "\n".join(out) + "\n"
    except (SyntaxError, ValueError, ZeroDivisionError, KeyError, OverflowError, RecursionError):
        return None


@functools.lru_cache(maxsize=200_000)
def _pass_vector(program: str, tests_json: str) -> tuple[bool, ...]:
    tests = json.loads(tests_json)
    outs = (interpret(program, int(i)) for i in tests["inputs"])
    return tuple(got is not None and got.strip() == want.strip() for got, want in zip(outs, tests["outputs"]))


def pass_fraction(response: str, tests_json: str) -> float:
    """Fraction of stdin/stdout tests the response's program passes (0 when no program is found)."""
    program = extract_program(response)
    if program is None:
        return 0.0
    passed = _pass_vector(program, tests_json)
    return sum(passed) / len(passed) if passed else 0.0


def judge(response: str, tests_json: str) -> bool:
    """Miniature curation judge: the program passes every test."""
    return pass_fraction(response, tests_json) == 1.0
