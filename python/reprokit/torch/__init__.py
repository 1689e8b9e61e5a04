"""reprokit for PyTorch 2: `import reprokit.torch` (or `python -m reprokit.torch SCRIPT`) wraps the
graphs torch.compile hands its backend, as REPRO_AFTER and REPRO_LEVEL ask (docs/PYTORCH2.md)."""
from .hook import ReproFailure, compiled_graphs, install, installed_config

install()

__all__ = ["ReproFailure", "compiled_graphs", "install", "installed_config"]
