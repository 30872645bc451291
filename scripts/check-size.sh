#!/usr/bin/env bash
# Checks the size rules of docs/architecture.md ("Size rules"):
#   * crates/cli/src holds at most 2,500 lines, and none of its files more than 400;
#   * no file in crates/engine/src is over 600 lines (issue 29: the engine stays a
#     place one can work in; split a file by meaning when it grows);
#   * no function in the workspace (crates/, fuzz/) is over 120 lines, unless the
#     comment right above it says why it is kept whole ("over 120 lines": a table,
#     a template read as the file it renders).
# Function lengths come from a brace counter that skips comments, strings, raw
# strings and char literals: from the line of `fn` to the line of its closing brace.
# Prints every offender and exits 1 if there is one; `--list` prints them and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import os, re, sys

CLI_TOTAL, CLI_FILE, ENGINE_FILE, FN_LINES = 2500, 400, 600, 120
list_only = "--list" in sys.argv[1:]

def rust_files(*roots):
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in ("target", ".git")]
            for name in sorted(filenames):
                if name.endswith(".rs"):
                    yield os.path.join(dirpath, name)

def code_only(text):
    """The text with comments, strings and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    blank = lambda s: "".join("\n" if c == "\n" else " " for c in s)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j])); i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j): depth += 1; j += 2
                elif text.startswith("*/", j): depth -= 1; j += 2
                else: j += 1
            out.append(blank(text[i:j])); i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 300])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(text[i:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i:j + 1])); i = j + 1
        elif c == "'":
            # A char literal ('{', '\n', '\u{7b}') or a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append(blank(m.group(0))); i += m.end()
            else:
                out.append(c); i += 1
        else:
            out.append(c); i += 1
    return "".join(out)

def long_functions(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    code = code_only(text)
    raw_lines = text.split("\n")
    line_of = lambda pos: code.count("\n", 0, pos) + 1
    for m in re.finditer(r"\bfn\s+([A-Za-z_]\w*)", code):
        depth, j = 0, m.end()
        while j < len(code):
            ch = code[j]
            if ch in "([": depth += 1
            elif ch in ")]": depth -= 1
            elif depth == 0 and ch in ";{": break
            j += 1
        if j >= len(code) or code[j] == ";":
            continue  # a declaration without a body
        braces, k = 0, j
        while k < len(code):
            if code[k] == "{": braces += 1
            elif code[k] == "}":
                braces -= 1
                if braces == 0: break
            k += 1
        start, end = line_of(m.start()), line_of(k)
        length = end - start + 1
        if length <= FN_LINES:
            continue
        # The comment and attribute lines right above the function.
        above, l = [], start - 2
        while l >= 0 and re.match(r"\s*(//|#\[|\*)", raw_lines[l]):
            above.append(raw_lines[l]); l -= 1
        excused = any("over 120 lines" in a for a in above)
        yield m.group(1), start, length, excused

failures = []
cli = [(p, sum(1 for _ in open(p, encoding="utf-8"))) for p in rust_files("crates/cli/src")]
total = sum(n for _, n in cli)
print(f"crates/cli/src: {total} lines in {len(cli)} files (at most {CLI_TOTAL})")
if total > CLI_TOTAL:
    failures.append(f"crates/cli/src is {total} lines, over {CLI_TOTAL}")
for path, n in sorted(cli, key=lambda x: -x[1]):
    if n > CLI_FILE:
        failures.append(f"{path}: {n} lines, over {CLI_FILE}")
for path in rust_files("crates/engine/src"):
    n = sum(1 for _ in open(path, encoding="utf-8"))
    if n > ENGINE_FILE:
        failures.append(f"{path}: {n} lines, over {ENGINE_FILE}")
for path in rust_files("crates", "fuzz"):
    for name, start, length, excused in long_functions(path):
        where = f"{path}:{start} fn {name}: {length} lines"
        if excused:
            print(f"kept whole (the comment above says why): {where}")
        else:
            failures.append(f"{where}, over {FN_LINES}")
for f in failures:
    print(f"too long: {f}")
print("size rules: " + ("ok" if not failures else f"{len(failures)} offender(s)"))
sys.exit(0 if list_only or not failures else 1)
PY
