#!/usr/bin/env python3
"""Regenerates tests/fuzz/corpus/: one directory per hostile-input case, each with case.json.

    python3 tests/fuzz/make_corpus.py --exe build/reprokit

The bundle cases start from a tiny bundle that --exe writes (graph tiny: mul then relu, with
--inject relu:runtime_error under REPRO_AFTER=aot); everything else is written from the text
below. case.json is read by `fuzz_driver replay` (tests/fuzz/README.md describes its fields).
Expected results follow the CLI contract in docs/DESIGN.md: bad input is exit 2 with a message
naming the file / line / node / variable; 3 and signals never; nothing written outside a bundle.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

TINY_RK = """graph tiny(%x: f32[4], %w: f32[4]) {
  %y = mul(%x, %w)
  %z = relu(%y)
  return (%z)
}
"""

ONE_INPUT_RK = """graph g(%x: f32[4]) {
  %y = relu(%x)
  return (%y)
}
"""


def checksum(data: bytes) -> str:
    # What reprokit writes into manifests (its offset basis is 1469598103934665603).
    h = 1469598103934665603
    for c in data:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "fnv1a64:%016x" % h


def npy_bytes(header: str, data: bytes) -> bytes:
    n = len(header) + 1 + 10
    pad = (64 - n % 64) % 64
    h = header + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data


def make_base_bundle(exe):
    work = tempfile.mkdtemp(prefix="rk-corpus-")
    with open(os.path.join(work, "tiny.rk"), "w") as f:
        f.write(TINY_RK)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPRO")}
    env.update(REPRO_AFTER="aot", REPRO_LEVEL="2", REPRO_DIR="out", REPRO_CACHE_DIR="/tmp/rk-corpus-cache")
    subprocess.run([exe, "run", "tiny.rk", "--inject", "relu:runtime_error"], cwd=work, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    out = os.path.join(work, "out")
    dirs = [d for d in os.listdir(out) if os.path.exists(os.path.join(out, d, "manifest.json"))]
    if not dirs:
        raise SystemExit("make_corpus: %s wrote no bundle for tiny.rk" % exe)
    return work, os.path.join(out, dirs[0])


def write_case(name, case, files=None, bundle=None, manifest=None):
    d = os.path.join(CORPUS, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if bundle:
        for item in ("inputs", "minifier_launcher"):
            src = os.path.join(bundle, item)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(d, item))
            else:
                shutil.copy2(src, os.path.join(d, item))
    if manifest is not None:
        with open(os.path.join(d, "manifest.json"), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2, ensure_ascii=False)
            f.write("\n")
    for rel, content in (files or {}).items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
    with open(os.path.join(d, "case.json"), "w", encoding="utf-8") as f:
        json.dump(case, f, indent=2, ensure_ascii=False)
        f.write("\n")


def rename_value(m, old, new):
    """Renames value `old` everywhere a manifest names it (graph JSON, graph_text, inputs)."""
    def walk(j):
        if isinstance(j, dict):
            for k, v in list(j.items()):
                if k in ("name", "value") and v == old:
                    j[k] = new
                else:
                    walk(v)
        elif isinstance(j, list):
            for i, v in enumerate(j):
                if v == old:
                    j[i] = new
                else:
                    walk(v)
    walk(m["graph"])
    for e in m["inputs"]:
        if e["name"] == old:
            e["name"] = new
    inj = m["spec"].get("injection_nodes", {})
    if old in inj:
        inj[new] = inj.pop(old)
    text, out, i, pat = m["graph_text"], "", 0, "%" + old
    while i < len(text):
        j = i + len(pat)
        if text.startswith(pat, i) and (j >= len(text) or not (text[j].isalnum() or text[j] in "_.")):
            out += "%" + new
            i = j
        else:
            out += text[i]
            i += 1
    m["graph_text"] = out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    args = ap.parse_args()
    exe = os.path.abspath(args.exe)
    work, base = make_base_bundle(exe)
    with open(os.path.join(base, "manifest.json"), encoding="utf-8") as f:
        base_manifest = json.load(f)
    base_manifest["environment"] = {"note": "trimmed by make_corpus.py"}

    def manifest(edit=None):
        m = json.loads(json.dumps(base_manifest))
        if edit:
            edit(m)
        return m

    def bundle_case(name, description, argv, edit=None, **expect):
        case = {"description": description, "argv": argv}
        case.update(expect)
        write_case(name, case, bundle=base, manifest=manifest(edit))

    shutil.rmtree(CORPUS, ignore_errors=True)
    os.makedirs(CORPUS)
    MINIFY = ["{exe}", "minify", "{case}", "--jobs", "1", "--timeout", "5"]
    PRINT = ["{exe}", "print", "{case}/manifest.json"]
    ANALYZE = ["{exe}", "analyze", "{case}"]
    BISECT = ["{exe}", "bisect", "{case}", "--timeout", "5"]
    NEWLINE_FORMS = ["a\\x0ab", "a\\nb", "a\\u000ab", "a\\012b"]

    # ---- hostile value names in a bundle's graph JSON ------------------------------------------
    for cmd, argv in (("print", PRINT), ("minify", MINIFY)):
        bundle_case(f"manifest_node_name_newline_{cmd}",
                    "a node name holding a newline in the manifest's graph JSON and graph_text",
                    argv, lambda m: rename_value(m, "y", "a\nb"),
                    expect_exit=2, expect_stderr=["name"], expect_stderr_any=NEWLINE_FORMS)
    bundle_case("manifest_node_name_percent_s_n", "a node named %s%n (format-string bait), run through minify",
                MINIFY, lambda m: rename_value(m, "y", "%s%n"),
                expect_exit=2, expect_stderr=["%s%n"])
    bundle_case("manifest_node_name_percent_p", "a node named %p (format-string bait), run through bisect",
                BISECT, lambda m: rename_value(m, "y", "%p"),
                expect_exit=2, expect_stderr=["%p"])

    # ---- input names that would write outside the bundle ---------------------------------------
    bundle_case("manifest_input_name_abs_tmp",
                "an input named /tmp/x: minify writes repro_inputs/<name>.npy; must be refused, nothing written",
                MINIFY, lambda m: rename_value(m, "x", "/tmp/x"),
                expect_exit=2, expect_stderr=["/tmp/x"],
                untouched=["/tmp/x", "/tmp/x.npy", "{outside}"])
    bundle_case("manifest_input_name_dotdot",
                "an input named ../../x: must be refused, nothing written next to the bundle",
                MINIFY, lambda m: rename_value(m, "x", "../../x"),
                expect_exit=2, expect_stderr=["../../x"],
                untouched=["{tmp}/x.npy", "{tmp}/x", "{case}/x.npy", "{outside}"])
    bundle_case("manifest_input_file_outside",
                "an input whose file is ../outside/secret.npy (outside the bundle), checksum matching",
                BISECT, lambda m: m["inputs"][0].update(file="../outside/secret.npy"),
                setup=[{"copy": ["inputs/x.npy", "{outside}/secret.npy"]}],
                expect_exit=2, expect_stderr_any=["outside", "secret.npy"])

    # ---- symlinks out of the bundle where the minifier writes ----------------------------------
    for link in ("report.json.tmp", "repro.rk.tmp"):
        bundle_case(f"bundle_symlink_{link.replace('.', '_')}",
                    f"{link} is a symlink to a file outside the bundle: minify must not write through it",
                    MINIFY, None,
                    setup=[{"write": ["{outside}/target.txt", "outside target: must stay untouched\n"]},
                           {"symlink": [link, "{outside}/target.txt"]}],
                    expect_exit=[0, 2], untouched=["{outside}/target.txt"])
    bundle_case("bundle_symlink_minify_work",
                "minify_work is a symlink to a directory outside the bundle: minify must not write into it",
                MINIFY, None,
                setup=[{"mkdir": "{outside}/work"}, {"symlink": ["minify_work", "{outside}/work"]}],
                expect_exit=[0, 2], untouched=["{outside}/work"])

    # ---- the manifest itself ----------------------------------------------------------------------
    bundle_case("manifest_is_directory_print", "manifest.json is a directory", PRINT, None,
                setup=[{"mkdir": "manifest.json"}], expect_exit=2, expect_stderr=["manifest.json"])
    bundle_case("manifest_is_directory_minify", "manifest.json is a directory", MINIFY, None,
                setup=[{"mkdir": "manifest.json"}], expect_exit=2, expect_stderr=["manifest.json"])
    bundle_case("manifest_symlink_loop_print", "manifest.json is a symlink to itself", PRINT, None,
                setup=[{"symlink": ["manifest.json", "manifest.json"]}], expect_exit=2, expect_stderr=["manifest.json"])
    bundle_case("manifest_symlink_loop_analyze", "manifest.json is a symlink to itself", ANALYZE, None,
                setup=[{"symlink": ["manifest.json", "manifest.json"]}], expect_exit=2, expect_stderr=["manifest.json"])
    bundle_case("manifest_fifo_print", "manifest.json is a FIFO with no writer (reading it blocks forever)", PRINT, None,
                setup=[{"mkfifo": "manifest.json"}], expect_exit=2, expect_stderr=["manifest.json"], timeout=10)
    bundle_case("manifest_nested_json_50000", "manifest.json nests 50,000 JSON arrays", PRINT, None,
                setup=[{"nest": ["manifest.json", 50000, "{\"format_version\": 1, \"graph\": ", "", "["]}],
                expect_exit=2, expect_stderr=["manifest.json"])
    bundle_case("manifest_bogus_stage_minify", "spec.stage is a bogus string: bad input, not 'does not fail'",
                MINIFY, lambda m: m["spec"].update(stage="bogus_stage"),
                expect_exit=2, expect_stderr=["bogus_stage"], expect_stderr_not=["does not fail"])
    bundle_case("manifest_bogus_stage_bisect", "spec.stage is a bogus string", BISECT,
                lambda m: m["spec"].update(stage="bogus_stage"),
                expect_exit=2, expect_stderr=["bogus_stage"], expect_stderr_not=["does not fail"])
    bundle_case("manifest_bogus_backend_minify", "spec.backend is a bogus string: bad input, not 'does not fail'",
                MINIFY, lambda m: m["spec"].update(backend="bogus_backend"),
                expect_exit=2, expect_stderr=["bogus_backend"], expect_stderr_not=["does not fail"])
    bundle_case("manifest_bogus_level", "level is a string", MINIFY, lambda m: m.update(level="bogus_level"),
                expect_exit=2, expect_stderr=["level"])
    bundle_case("manifest_number_overflow", "a number too large for a double (1e999) in the manifest", PRINT, None,
                setup=[{"write": ["manifest.json", json.dumps(dict(manifest(), seed="@@"), indent=2).replace('"@@"', "1e999")]}],
                expect_exit=2, expect_stderr=["manifest.json"])

    # ---- bundle inputs ----------------------------------------------------------------------------
    bundle_case("bundle_input_file_dev_zero", "an input's file field is /dev/zero", MINIFY,
                lambda m: m["inputs"][0].update(file="/dev/zero"),
                expect_exit=2, expect_stderr=["/dev/zero"], timeout=15)
    bundle_case("bundle_input_fifo", "inputs/x.npy is a FIFO with no writer", BISECT, None,
                setup=[{"mkfifo": "inputs/x.npy"}], expect_exit=2, expect_stderr=["x.npy"], timeout=10)
    bundle_case("bundle_input_symlink_dev_zero", "inputs/x.npy is a symlink to /dev/zero", MINIFY, None,
                setup=[{"symlink": ["inputs/x.npy", "/dev/zero"]}], expect_exit=2, expect_stderr=["x.npy"], timeout=15)
    bundle_case("bundle_input_symlink_outside", "inputs/x.npy is a symlink to a copy outside the bundle (same bytes)",
                BISECT, None,
                setup=[{"copy": ["inputs/x.npy", "{outside}/x.npy"]}, {"symlink": ["inputs/x.npy", "{outside}/x.npy"]}],
                expect_exit=2, expect_stderr=["x.npy"])
    bundle_case("bundle_inputs_dir_unreadable", "inputs/ is chmod 000 (skipped when running as root)", BISECT, None,
                setup=[{"chmod": ["inputs", "000"], "skip_if_still_readable": True}],
                expect_exit=2, expect_stderr=["inputs"])

    def npy_in_manifest(header, data):
        def edit(m):
            m["inputs"][0]["checksum"] = checksum(npy_bytes(header, data))
        return edit
    # 512 data bytes = 8 * 16 * 4: a reader that drops the signs of (-8, -16) would accept the file.
    huge_hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"
    neg_hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (-8, -16), }"
    ok_8x16 = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (8, 16), }", b"\0" * 512)

    def declare_8x16(m):  # both inputs become f32[8, 16], so a reader that drops the signs accepts x
        for i in m["graph"]["inputs"]:
            i["shape"] = [8, 16]
        m["graph_text"] = m["graph_text"].replace("f32[4]", "f32[8, 16]")
        m["inputs"][1]["checksum"] = checksum(ok_8x16)
    for tag, hdr in (("huge", huge_hdr), ("negative", neg_hdr)):
        name = f"bundle_npy_shape_{tag}"

        def edit(m, hdr=hdr, tag=tag):
            if tag == "negative":
                declare_8x16(m)
            npy_in_manifest(hdr, b"\0" * 512)(m)
        files = {"inputs/x.npy": npy_bytes(hdr, b"\0" * 512)}
        if tag == "negative":
            files["inputs/w.npy"] = ok_8x16
        write_case(name, {"description": f"inputs/x.npy declares shape {hdr.split('shape')[1][3:-4]} (checksum matches)",
                          "argv": BISECT, "expect_exit": 2, "expect_stderr": ["x.npy"]},
                   bundle=base, manifest=manifest(edit), files=files)

    # ---- .rk models ------------------------------------------------------------------------------
    def rk_case(name, description, text, argv, **expect):
        case = {"description": description, "argv": argv}
        case.update(expect)
        write_case(name, case, files={"model.rk": text} if text is not None else None)

    RUN_EAGER = ["{exe}", "run", "{case}/model.rk", "--backend", "eager"]
    RUN_CPP = ["{exe}", "run", "{case}/model.rk"]
    PRINT_RK = ["{exe}", "print", "{case}/model.rk"]
    strided = "graph g(%x: f32[2, 2] strides=[9223372036854775807, 1]) {\n  %y = relu(%x)\n  return (%y)\n}\n"
    rk_case("rk_strides_int64_max_run", "strides=[9223372036854775807, 1] on an input", strided, RUN_EAGER,
            expect_exit=2, expect_stderr=["stride"])
    rk_case("rk_strides_int64_max_print", "strides=[9223372036854775807, 1] on an input", strided, PRINT_RK,
            expect_exit=2, expect_stderr=["stride"])
    big = "4294967296, 4294967296"
    overflow = {
        "matmul": f"graph g(%ovf_in: f32[{big}], %w: f32[4294967296, 2]) {{\n  %ovf_node = matmul(%ovf_in, %w)\n  return (%ovf_node)\n}}\n",
        "softmax": f"graph g(%ovf_in: f32[{big}]) {{\n  %ovf_node = softmax(%ovf_in, dim=-1)\n  return (%ovf_node)\n}}\n",
        "linear": f"graph g(%ovf_in: f32[{big}], %w: f32[2, 4294967296]) {{\n  %ovf_node = linear(%ovf_in, %w)\n  return (%ovf_node)\n}}\n",
        "sum": f"graph g(%ovf_in: f32[{big}]) {{\n  %ovf_node = sum(%ovf_in, dims=[1])\n  return (%ovf_node)\n}}\n",
    }
    for op, text in overflow.items():
        rk_case(f"rk_elements_overflow_{op}", f"f32[{big}] (2^64 elements) through {op}", text, RUN_EAGER,
                expect_exit=2, expect_stderr_any=["ovf_in", "ovf_node"])
    rk_case("rk_elements_overflow_matmul_cpp", f"f32[{big}] through matmul, cpp backend", overflow["matmul"], RUN_CPP,
            expect_exit=2, expect_stderr_any=["ovf_in", "ovf_node"])
    huge = "graph g(%huge_in: f32[100000, 100000]) {\n  %huge_node = relu(%huge_in)\n  return (%huge_node)\n}\n"
    rk_case("rk_tensor_too_big_eager", "f32[100000, 100000] (40 GB): exit 2 naming the input or node, not bad_alloc",
            huge, RUN_EAGER, expect_exit=2, expect_stderr_any=["huge_in", "huge_node"], expect_stderr_not=["bad_alloc"])
    rk_case("rk_tensor_too_big_cpp", "f32[100000, 100000] (40 GB), cpp backend", huge, RUN_CPP,
            expect_exit=2, expect_stderr_any=["huge_in", "huge_node"], expect_stderr_not=["bad_alloc"])
    write_case("rk_nested_brackets_attr_50000",
               {"description": "50,000 nested '[' in an attribute list (line 2)", "argv": PRINT_RK,
                "setup": [{"nest": ["model.rk", 50000, "graph g(%x: f32[4]) {\n  %y = reshape(%x, shape=", "4])\n  return (%y)\n}\n"]}],
                "expect_exit": 2, "expect_stderr_any": ["line 2", ":2:"]})
    write_case("rk_nested_brackets_type_50000",
               {"description": "50,000 nested '[' in an input type (line 1)", "argv": RUN_EAGER,
                "setup": [{"nest": ["model.rk", 50000, "graph g(%x: f32", "4]) {\n  %y = relu(%x)\n  return (%y)\n}\n"]}],
                "expect_exit": 2, "expect_stderr_any": ["line 1", ":1:"]})

    # ---- run --inputs ---------------------------------------------------------------------------
    RUN_INPUTS = ["{exe}", "run", "{case}/model.rk", "--backend", "eager", "--inputs", "{case}/inputs"]
    for tag, hdr in (("huge", huge_hdr), ("negative", neg_hdr)):
        model = ONE_INPUT_RK if tag == "huge" else ONE_INPUT_RK.replace("f32[4]", "f32[8, 16]")
        write_case(f"run_inputs_npy_shape_{tag}",
                   {"description": f"run --inputs with x.npy declaring shape {hdr.split('shape')[1][3:-4]}",
                    "argv": RUN_INPUTS, "expect_exit": 2, "expect_stderr": ["x.npy"]},
                   files={"model.rk": model, "inputs/x.npy": npy_bytes(hdr, b"\0" * 512)})
    write_case("run_inputs_fifo", {"description": "run --inputs where x.npy is a FIFO with no writer", "argv": RUN_INPUTS,
                                   "setup": [{"mkdir": "inputs"}, {"mkfifo": "inputs/x.npy"}], "timeout": 10,
                                   "expect_exit": 2, "expect_stderr": ["x.npy"]},
               files={"model.rk": ONE_INPUT_RK})
    write_case("run_inputs_dev_zero", {"description": "run --inputs where x.npy is a symlink to /dev/zero", "argv": RUN_INPUTS,
                                       "setup": [{"mkdir": "inputs"}, {"symlink": ["inputs/x.npy", "/dev/zero"]}], "timeout": 15,
                                       "expect_exit": 2, "expect_stderr": ["x.npy"]},
               files={"model.rk": ONE_INPUT_RK})
    write_case("run_inputs_dir_unreadable",
               {"description": "run --inputs DIR with DIR chmod 000 (skipped when running as root)", "argv": RUN_INPUTS,
                "setup": [{"npy": {"path": "inputs/x.npy", "dtype": "<f4", "shape": [4], "values": [1.0]}},
                          {"chmod": ["inputs", "000"], "skip_if_still_readable": True}],
                "expect_exit": 2, "expect_stderr": ["inputs"]},
               files={"model.rk": ONE_INPUT_RK})
    write_case("embedding_oob_index_cpp",
               {"description": "examples/embedding_classifier.rk with every token 1000 (100 embeddings), cpp backend: "
                               "exit 1 or 2 naming node %e, not garbage",
                "argv": ["{exe}", "run", "{source}/examples/embedding_classifier.rk", "--inputs", "{case}/inputs"],
                "setup": [{"npy": {"path": "inputs/tokens.npy", "dtype": "<i8", "shape": [4, 12], "values": [1000]}}],
                "expect_exit": [1, 2], "expect_stderr": ["1000"],
                "expect_stderr_any": ["%e ", "%e:", "%e,", "%e)", "%e'", "node e ", "'e'"]})
    write_case("embedding_oob_index_eager",
               {"description": "examples/embedding_classifier.rk with every token 1000, eager backend",
                "argv": ["{exe}", "run", "{source}/examples/embedding_classifier.rk", "--backend", "eager", "--inputs", "{case}/inputs"],
                "setup": [{"npy": {"path": "inputs/tokens.npy", "dtype": "<i8", "shape": [4, 12], "values": [1000]}}],
                "expect_exit": [1, 2], "expect_stderr": ["1000"],
                "expect_stderr_any": ["%e ", "%e:", "%e,", "%e)", "%e'", "node e ", "'e'"]})
    write_case("embedding_oob_index_harness_aot",
               {"description": "the same under REPRO_AFTER=aot: the bundle's failure names node e, not garbage",
                "argv": ["{exe}", "run", "{source}/examples/embedding_classifier.rk", "--inputs", "{case}/inputs"],
                "env": {"REPRO_AFTER": "aot", "REPRO_DIR": "{tmp}/out"},
                "setup": [{"npy": {"path": "inputs/tokens.npy", "dtype": "<i8", "shape": [4, 12], "values": [1000]}}],
                "expect_exit": [1, 2], "expect_stderr": ["1000"],
                "expect_stderr_any": ["%e ", "%e:", "%e,", "%e)", "%e'", "node e ", "'e'"]})

    # ---- environment variables and flags -------------------------------------------------------
    def env_case(name, description, env, argv=RUN_CPP, **expect):
        case = {"description": description, "argv": argv, "env": dict({"REPRO_DIR": "{tmp}/out"}, **env)}
        case.update(expect)
        write_case(name, case, files={"model.rk": ONE_INPUT_RK})
    env_case("env_repro_timeout_1e10", "REPRO_TIMEOUT=1e10 (huge but finite): runs, or exit 2 naming the variable",
             {"REPRO_AFTER": "aot", "REPRO_TIMEOUT": "1e10"}, expect_exit=[0, 2],
             expect_stderr_if_exit={"2": ["REPRO_TIMEOUT"]})
    env_case("env_repro_timeout_inf", "REPRO_TIMEOUT=inf: runs (no limit), or exit 2 naming the variable",
             {"REPRO_AFTER": "aot", "REPRO_TIMEOUT": "inf"}, expect_exit=[0, 2],
             expect_stderr_if_exit={"2": ["REPRO_TIMEOUT"]})
    env_case("env_repro_timeout_nan", "REPRO_TIMEOUT=nan: exit 2 naming the variable",
             {"REPRO_AFTER": "aot", "REPRO_TIMEOUT": "nan"}, expect_exit=2, expect_stderr=["REPRO_TIMEOUT"])
    env_case("env_repro_timeout_negative", "REPRO_TIMEOUT=-1: exit 2 naming the variable",
             {"REPRO_AFTER": "aot", "REPRO_TIMEOUT": "-1"}, expect_exit=2, expect_stderr=["REPRO_TIMEOUT"])
    env_case("env_repro_tolerance_nan", "REPRO_TOLERANCE=nan at REPRO_LEVEL=4: exit 2 naming the variable",
             {"REPRO_AFTER": "aot", "REPRO_LEVEL": "4", "REPRO_TOLERANCE": "nan"}, expect_exit=2,
             expect_stderr=["REPRO_TOLERANCE"])
    env_case("inject_op_not_in_graph", "--inject exp:runtime_error on a graph with no exp node",
             {}, argv=RUN_CPP + ["--inject", "exp:runtime_error"], expect_exit=2, expect_stderr=["exp"])
    env_case("inject_op_unknown", "--inject names an op that does not exist", {},
             argv=RUN_CPP + ["--inject", "notanop:crash"], expect_exit=2, expect_stderr=["notanop"])
    env_case("inject_kind_unknown", "--inject names a kind that does not exist", {},
             argv=RUN_CPP + ["--inject", "relu:bogus_kind"], expect_exit=2, expect_stderr=["bogus_kind"])
    env_case("env_repro_inject_op_not_in_graph", "REPRO_INJECT names an op no node has, under the harness: "
             "it is ambient (a graph without the op runs clean, with a note naming the op)",
             {"REPRO_AFTER": "aot", "REPRO_INJECT": "exp:runtime_error"}, expect_exit=0, expect_stderr=["exp"])
    write_case("inject_op_not_in_mlp",
               {"description": "examples/mlp.rk --inject relu:runtime_error: mlp has no relu node (gelu, softmax)",
                "argv": ["{exe}", "run", "{source}/examples/mlp.rk", "--inject", "relu:runtime_error"],
                "env": {"REPRO_AFTER": "aot", "REPRO_DIR": "{tmp}/out"},
                "expect_exit": 2, "expect_stderr": ["relu"]})

    # ---- i64 exactness --------------------------------------------------------------------------
    I64_RK = "graph g(%a: i64[3]) {\n  %out = add(%a, 0)\n  return (%out)\n}\n"
    vals = [9007199254740993, -9007199254740993, 9223372036854775807]
    for backend in ("eager", "aot_eager", "cpp"):
        write_case(f"i64_exact_add_zero_{backend}",
                   {"description": f"add(a, 0) on i64 2^53+1, -(2^53+1), 2^63-1 ({backend}): saved output is exact",
                    "argv": ["{exe}", "run", "{case}/model.rk", "--backend", backend, "--inputs", "{case}/inputs",
                             "--save-outputs", "{case}/outs"],
                    "setup": [{"npy": {"path": "inputs/a.npy", "dtype": "<i8", "shape": [3], "values": vals}}],
                    "expect_exit": 0, "expect_npy_i64": {"path": "outs/out.npy", "values": vals}},
                   files={"model.rk": I64_RK})

    shutil.rmtree(work, ignore_errors=True)
    print("wrote", len(os.listdir(CORPUS)), "cases under", CORPUS)


if __name__ == "__main__":
    main()
