#!/usr/bin/env python3
"""Lists every command-line flag of Megatron-LM's pretraining parser.

Usage:
  scripts/megatron_flags.py MEGATRON_GIT_DIR COMMIT > tests/data/megatron_flags.txt

tests/data/megatron_flags.txt was made from NVIDIA/Megatron-LM at
d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22). MEGATRON_GIT_DIR is a
clone or bare mirror; the files are read with `git show COMMIT:PATH`, so no
checkout and no Megatron import (it needs torch) is involved.

megatron/training/arguments.py adds its flags two ways, and both are read
here with Python's ast module:
  - parser.add_argument('--name', ...) calls: their option strings;
  - ArgumentGroupFactory(SomeConfig, exclude=[...]).build_group(...): one flag
    per dataclass field (with its base classes' fields), named as
    megatron/training/argument_utils.py names them: --field-name; a bool
    field whose default is not False gives --no-field-name and
    --disable-field-name; argparse_meta's "arg_names" replaces the name.
argparse.BooleanOptionalAction adds --no-NAME beside --NAME, as argparse does.
A call this script cannot read (a flag name that is not a literal) stops it
with an error instead of leaving the flag out.

Each line: FLAG ARITY TYPE [CHOICES], tab-separated. ARITY is switch (no
value), one or many (nargs '+', '*' or a count); TYPE is int, number or text;
CHOICES, where Megatron lists them as literals, are comma-separated.
"""
import ast
import subprocess
import sys

ARGUMENTS = "megatron/training/arguments.py"


class Source:
    """Python files of one Megatron commit, parsed once each."""

    def __init__(self, git_dir, commit):
        self.git_dir, self.commit, self.trees = git_dir, commit, {}

    def module(self, dotted):
        for path in (dotted.replace(".", "/") + ".py", dotted.replace(".", "/") + "/__init__.py"):
            if path not in self.trees:
                run = subprocess.run(["git", "-C", self.git_dir, "show", f"{self.commit}:{path}"],
                                     capture_output=True, text=True)
                self.trees[path] = (ast.parse(run.stdout), dotted) if run.returncode == 0 else None
            if self.trees[path]:
                return self.trees[path]
        sys.exit(f"megatron_flags.py: module {dotted} not found at {self.commit}")

    def find_class(self, name, module_name, seen=()):
        """The ClassDef `name` as seen from module `module_name` (following imports)."""
        tree, dotted = self.module(module_name)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node, dotted
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                target = node.module or ""
                if node.level:  # relative import
                    base = dotted.split(".")
                    if not self.trees.get(dotted.replace(".", "/") + "/__init__.py"):
                        base = base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([target] if target else []))
                if (target, name) not in seen:
                    return self.find_class(name, target, seen + ((target, name),))
        sys.exit(f"megatron_flags.py: class {name} not found from {module_name}")


def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def shape(action, nargs, type_name, choices):
    """(arity, type, choices) of one flag from its argparse settings."""
    if action is not None and ("store_true" in action or "store_false" in action or "Optional" in action
                               or "store_const" in action or action == "count"):
        return "switch", "", ""
    arity = "one" if nargs in (None, "?") else "many"
    kind = {"int": "int", "float": "number"}.get(type_name, "text")
    listed = ",".join(str(c) for c in choices) if isinstance(choices, (list, tuple)) else ""
    return arity, kind, listed


def unwrap_optional(annotation):
    """X from Optional[X], X | None or Union[X, None]."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        if ast.unparse(annotation.right) == "None":
            return annotation.left
        if ast.unparse(annotation.left) == "None":
            return annotation.right
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in ("Optional", "typing.Optional"):
        return annotation.slice
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in ("Union", "typing.Union"):
        parts = [e for e in getattr(annotation.slice, "elts", []) if ast.unparse(e) != "None"]
        if len(parts) == 1:
            return parts[0]
    return annotation


def is_bool(annotation):
    """bool, Optional[bool] or bool | None: argument_utils gives these actions."""
    text = ast.unparse(annotation).replace(" ", "")
    return text in ("bool", "Optional[bool]", "bool|None", "None|bool", "typing.Optional[bool]")


def field_flags(stmt):
    """The flags one dataclass field adds (none for ClassVar, InitVar, init=False)."""
    name = stmt.target.id
    annotation = ast.unparse(stmt.annotation)
    if "ClassVar" in annotation or "InitVar" in annotation or "KW_ONLY" in annotation:
        return []
    default, meta = stmt.value, {}
    if isinstance(stmt.value, ast.Call) and ast.unparse(stmt.value.func).endswith("field"):
        default = None
        for kw in stmt.value.keywords:
            if kw.arg == "init" and literal(kw.value) is False:
                return []
            if kw.arg == "default":
                default = kw.value
            if kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
                for k, v in zip(kw.value.keys, kw.value.values):
                    if literal(k) == "argparse_meta" and isinstance(v, ast.Dict):
                        meta = {literal(mk): mv for mk, mv in zip(v.keys, v.values)}
    # The annotation's argparse settings (argument_utils' _extract_type), then the metadata's.
    inner = unwrap_optional(stmt.annotation)
    action = "store_true" if is_bool(stmt.annotation) else None
    nargs, choices = None, None
    if isinstance(inner, ast.Subscript) and ast.unparse(inner.value) in ("list", "List", "typing.List"):
        nargs, inner = "+", unwrap_optional(inner.slice)
    type_name = ast.unparse(inner)
    if isinstance(inner, ast.Subscript) and ast.unparse(inner.value).endswith("Literal"):
        choices = literal(inner.slice)
        choices = choices if isinstance(choices, tuple) else (choices,)
        type_name = type(choices[0]).__name__
    if "nargs" in meta:
        nargs = literal(meta["nargs"])
    if "type" in meta:
        action, type_name = None, ast.unparse(meta["type"])
    if "choices" in meta:
        choices = literal(meta["choices"])
    if "action" in meta:
        action = ast.unparse(meta["action"])
    arity = shape(action, nargs, type_name, choices)
    if "arg_names" in meta:
        names = literal(meta["arg_names"])
        if not names:
            sys.exit(f"megatron_flags.py: field {name}: arg_names is not a literal list")
        return [(n, arity) for n in names]
    flag = "--" + name.replace("_", "-")
    if action == "store_true":
        is_false = default is not None and isinstance(default, ast.Constant) and default.value is False
        if not is_false:
            return [("--no-" + flag[2:], arity), ("--disable-" + flag[2:], arity)]
    return [(flag, arity)]


def dataclass_flags(src, class_name, module_name, exclude):
    node, dotted = src.find_class(class_name, module_name)
    fields = {}  # name -> flags; base classes first, a subclass's field replaces theirs
    for base in node.bases:
        base_name = ast.unparse(base)
        if base_name not in ("object", "ABC", "Generic"):
            fields.update(dataclass_flags(src, base_name.split(".")[-1], dotted, set()))
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            fields[stmt.target.id] = field_flags(stmt)
    return {k: v for k, v in fields.items() if k not in exclude}


def local_classes(function):
    """Names imported inside one function: name -> module."""
    found = {}
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                found[a.asname or a.name] = node.module
    return found


def list_value(node, function):
    """exclude=[...] or exclude=NAME where NAME = [...] in the same function."""
    if node is None:
        return set()
    if isinstance(node, ast.Name):
        name = node.id
        for stmt in ast.walk(function):
            if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and ast.unparse(stmt.target) == name:
                sys.exit(f"megatron_flags.py: line {stmt.lineno}: exclude list {name} is changed after it is made")
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                node = stmt.value
    value = literal(node)
    if value is None:
        sys.exit(f"megatron_flags.py: exclude list {ast.unparse(node)} is not a literal")
    return set(value)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src = Source(sys.argv[1], sys.argv[2])
    tree, _ = src.module(ARGUMENTS[:-3].replace("/", "."))
    module_imports = local_classes(tree)
    flags = {}  # flag -> (arity, type, choices)
    for function in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
        imports = {**module_imports, **local_classes(function)}
        for call in [n for n in ast.walk(function) if isinstance(n, ast.Call)]:
            func = ast.unparse(call.func)
            if func.endswith(".add_argument"):
                kw = {k.arg: k.value for k in call.keywords}
                action = ast.unparse(kw["action"]).strip("'\"") if "action" in kw else None
                arity = shape(action, literal(kw["nargs"]) if "nargs" in kw else None,
                              ast.unparse(kw["type"]) if "type" in kw else "str",
                              literal(kw["choices"]) if "choices" in kw else None)
                for arg in call.args:
                    name = literal(arg)
                    if not isinstance(name, str):
                        sys.exit(f"megatron_flags.py: line {call.lineno}: flag {ast.unparse(arg)} is not a literal")
                    if name.startswith("-"):
                        flags[name] = arity
                        if action and "BooleanOptionalAction" in action and name.startswith("--"):
                            flags["--no-" + name[2:]] = arity
            elif func == "ArgumentGroupFactory":
                cls = ast.unparse(call.args[0])
                exclude = list_value(next((k.value for k in call.keywords if k.arg == "exclude"), None), function)
                if cls not in imports:
                    sys.exit(f"megatron_flags.py: line {call.lineno}: where {cls} comes from is not found")
                for names in dataclass_flags(src, cls, imports[cls], exclude).values():
                    flags.update(dict(names))
    print(f"# Megatron-LM's training flags: {ARGUMENTS} (add_argument calls and its dataclass argument groups)")
    print(f"# at NVIDIA/Megatron-LM {sys.argv[2]}; made by scripts/megatron_flags.py.")
    print("# One flag a line: FLAG ARITY TYPE [CHOICES], tab-separated (see the script).")
    for flag in sorted(flags):
        print("\t".join([flag, *flags[flag]]).rstrip("\t"))


if __name__ == "__main__":
    main()
