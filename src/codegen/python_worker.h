// A long-lived Python worker of a backend whose compiler is a Python package (inductor, openvino,
// tvm, iree): one interpreter per process and worker module, started at the first request, that
// imports the compiler once and then answers one JSON request per line. A worker that dies is a
// crash of the compiler under test (its signal in the message) and is replaced at the next
// request; a hang is REPRO_TIMEOUT's, as for every backend. A worker whose reply says
// "worker_ends" (a GPU fault left its CUDA context unusable) is finished after that reply.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace reprokit {

// $REPROKIT_PYTHON, else the interpreter a pip-installed reprokit was installed for, else the
// virtual environment scripts/install_deps.sh makes in the checkout, else python3 on PATH.
std::string python_interpreter();

struct PythonWorkerSpec {
  std::string compiler;             // the compiler's name in messages ("Inductor", "OpenVINO")
  std::vector<std::string> module;  // `python -m` and its arguments: {"reprokit.onnx_worker", "tvm"}
  std::string install_hint;         // what to install or set when the worker cannot start
};

// Sends `request` to the worker of `spec` (starting it when this process has none alive) and
// returns its reply. Throws UserError when the worker cannot start or answers nonsense, and
// CompileFailure{crash} when it dies on the request.
nlohmann::json ask_python_worker(const PythonWorkerSpec& spec, const nlohmann::json& request);

// The compiler's version as a worker of `spec` says it when it starts (its "ready" line), from a
// worker of its own that ends at once: a bug report asks this after a run that may have hung or
// crashed the long-lived one. "unknown" when it does not start within `timeout_s`.
std::string python_worker_version(const PythonWorkerSpec& spec, double timeout_s);

}  // namespace reprokit
