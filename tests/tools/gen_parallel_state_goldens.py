#!/usr/bin/python3
"""Writes tests/data/parallel_state_goldens.json: the rank groups that
Megatron-LM's own RankGenerator (megatron/core/parallel_state.py) builds for
order "tp-cp-ep-dp-pp" over a table of world sizes and layouts, for every
token (each non-empty set of dimensions, plus a few spelled out of order).
tests/unit/test_parallel_state.cpp checks trainer/parallel/ParallelState
against them, so kiln's groups are Megatron's, not a re-derivation of them.

Megatron's code is not copied into kiln: point the script at a checkout,
e.g. from a bare mirror

  mkdir -p /tmp/megatron
  git --git-dir=<Megatron-LM.git> archive HEAD megatron/core/parallel_state.py | tar -x -C /tmp/megatron
  /usr/bin/python3 tests/tools/gen_parallel_state_goldens.py /tmp/megatron \
      tests/data/parallel_state_goldens.json <megatron commit>

Needs Debian's python3-torch and python3-numpy (parallel_state.py imports
both at the top). Its two package-relative imports
(megatron.core.inference.symmetric_memory and megatron.core.utils) pull in
much of megatron.core and are used only by process-group code this script
never calls, so they are replaced by empty stand-in modules; RankGenerator
and generate_masked_orthogonal_rank_groups run unmodified.

RankGenerator allows ep > 1 only with cp == 1 (Megatron keeps a second,
expert generator for ep), so the ep cases have cp 1.
"""
import importlib.util
import itertools
import json
import os
import sys
import types

ORDER = "tp-cp-ep-dp-pp"
DIMS = ORDER.split("-")

# (tp, cp, ep, dp, pp); the world size is their product.
CASES = [
    (1, 1, 1, 1, 1),  # 1
    (2, 1, 1, 1, 1),  # 2
    (1, 1, 1, 2, 1),
    (1, 1, 1, 1, 2),
    (1, 2, 1, 1, 1),
    (2, 1, 1, 2, 1),  # 4
    (2, 1, 1, 1, 2),
    (1, 1, 1, 2, 2),
    (2, 2, 1, 1, 1),
    (1, 2, 1, 2, 1),
    (1, 1, 2, 2, 1),
    (2, 1, 1, 2, 2),  # 8: docs/DISTRIBUTED.md's example
    (2, 2, 1, 2, 1),
    (2, 2, 1, 1, 2),
    (4, 1, 1, 2, 1),
    (1, 1, 1, 4, 2),
    (2, 1, 2, 2, 1),
    (1, 2, 1, 2, 2),
    (2, 2, 1, 2, 2),  # 16
    (4, 1, 1, 2, 2),
    (2, 1, 2, 2, 2),
    (1, 1, 4, 4, 1),
    (2, 1, 1, 2, 4),
    (2, 2, 1, 4, 2),  # 32
    (4, 2, 1, 2, 2),
    (2, 1, 4, 2, 2),
    (8, 1, 1, 1, 4),
    (1, 1, 1, 32, 1),
]

# A token's dimensions need not follow the order: Megatron masks by name.
OUT_OF_ORDER = ["dp-cp", "pp-tp", "dp-tp", "pp-dp-tp", "ep-tp", "pp-ep-tp"]


def load_parallel_state(megatron_dir):
    for name in ["megatron", "megatron.core", "megatron.core.inference"]:
        module = types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module
    symmetric = types.ModuleType("megatron.core.inference.symmetric_memory")
    symmetric.SymmetricMemoryManager = None
    sys.modules[symmetric.__name__] = symmetric
    utils = types.ModuleType("megatron.core.utils")
    utils.GlobalMemoryBuffer = None
    utils.is_torch_min_version = lambda *args, **kwargs: True
    sys.modules[utils.__name__] = utils
    path = os.path.join(megatron_dir, "megatron", "core", "parallel_state.py")
    spec = importlib.util.spec_from_file_location("megatron.core.parallel_state", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tokens():
    out = []
    for n in range(1, len(DIMS) + 1):
        out += ["-".join(c) for c in itertools.combinations(DIMS, n)]
    return out + OUT_OF_ORDER


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: gen_parallel_state_goldens.py MEGATRON_DIR OUT.json MEGATRON_COMMIT")
    megatron_dir, out_path, commit = sys.argv[1:]
    ps = load_parallel_state(megatron_dir)
    cases = []
    for tp, cp, ep, dp, pp in CASES:
        gen = ps.RankGenerator(tp=tp, ep=ep, dp=dp, pp=pp, cp=cp, order=ORDER)
        cases.append({
            "sizes": {"tp": tp, "cp": cp, "ep": ep, "dp": dp, "pp": pp},
            "world_size": tp * cp * ep * dp * pp,
            "groups": {t: gen.get_ranks(t) for t in tokens()},
        })
    doc = {
        "source": "Megatron-LM megatron/core/parallel_state.py RankGenerator.get_ranks",
        "megatron_commit": commit,
        "generator": "tests/tools/gen_parallel_state_goldens.py",
        "order": ORDER,
        "cases": cases,
    }
    # One token's groups per line keeps the file reviewable and diffable.
    lines = ["{"]
    for key in ["source", "megatron_commit", "generator", "order"]:
        lines.append(f"  {json.dumps(key)}: {json.dumps(doc[key])},")
    lines.append('  "cases": [')
    for i, case in enumerate(cases):
        lines.append(f'    {{"sizes": {json.dumps(case["sizes"])}, "world_size": {case["world_size"]}, "groups": {{')
        items = list(case["groups"].items())
        for j, (token, groups) in enumerate(items):
            comma = "," if j + 1 < len(items) else ""
            lines.append(f"      {json.dumps(token)}: {json.dumps(groups, separators=(',', ':'))}{comma}")
        lines.append("    }}" + ("," if i + 1 < len(cases) else ""))
    lines.append("  ]")
    lines.append("}")
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")

if __name__ == "__main__":
    main()
